import { gunzipSync, inflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { UsersResponseSchema } from "../../../gen/agentplane/analytics/v1/analytics_pb.js";
import { bodyText, deflatePart } from "../../platform/deflate-parts.js";
import { HTTP_BODY_CHUNK_BYTES } from "../../platform/body-chunks.js";
import { COMPRESSOR_MIN_CONTENT_LENGTH } from "../../platform/compressor.js";
import { compressionOf, envelopeParts, httpBodyChunks } from "./http-body.js";

const bytesOf = (chunks: ReturnType<typeof httpBodyChunks>) => {
  const all = [...chunks];
  return { all, body: Buffer.concat(all.map((c) => c.data as Uint8Array)) };
};

describe("compressionOf", () => {
  it("compresses text from 8 KiB when the client takes a coding, and stored compressed parts at any size", () => {
    const under = ["x".repeat(COMPRESSOR_MIN_CONTENT_LENGTH - 1)];
    const at = ["x".repeat(COMPRESSOR_MIN_CONTENT_LENGTH)];
    expect(compressionOf(under, "gzip")).toBeNull();
    expect(compressionOf(at, "gzip")).toBe("gzip");
    expect(compressionOf(at, null)).toBeNull();
    expect(compressionOf(["[", deflatePart("{}"), "]"], "deflate")).toBe("deflate");
    expect(compressionOf(["[", deflatePart("{}"), "]"], null)).toBeNull();
  });
});

describe("httpBodyChunks", () => {
  const rows = Array.from({ length: 5000 }, (_, i) => `{"user_id":"u${i}","n":${i}}`).join(",");
  const parts = ["[", deflatePart(rows.slice(0, 40000)), rows.slice(40000), "]"];

  it("cuts the text into chunks of at most 64 KiB, the first naming the content type", () => {
    const { all, body } = bytesOf(httpBodyChunks(parts, null));
    expect(body.toString()).toBe(bodyText(parts));
    expect(all.length).toBe(Math.ceil(body.length / HTTP_BODY_CHUNK_BYTES));
    expect(all.every((c) => (c.data as Uint8Array).length <= HTTP_BODY_CHUNK_BYTES)).toBe(true);
    expect(all[0]!.contentType).toBe("application/json");
    expect(all.slice(1).every((c) => c.contentType === "")).toBe(true);
  });

  it("sends one gzip or zlib stream across the chunks", () => {
    expect(gunzipSync(bytesOf(httpBodyChunks(parts, "gzip")).body).toString()).toBe(bodyText(parts));
    expect(inflateSync(bytesOf(httpBodyChunks(parts, "deflate")).body).toString()).toBe(bodyText(parts));
  });
});

describe("envelopeParts", () => {
  it("prints the message around the rows as the edge prints it, every implicit field included", () => {
    const parts = envelopeParts(UsersResponseSchema, { meta: { orgId: "o", startDate: "a", endDate: "b" } }, ["[1]"]);
    expect(bodyText(parts)).toBe(
      '{"data":[1],"meta":{"org_id":"o","start_date":"a","end_date":"b","has_more":false,"next_cursor":""}}',
    );
  });
});
