import { gunzipSync, inflateSync } from "node:zlib";
import { createContextValues, createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  ActivityRowSchema,
  AnalyticsService,
  ToolsRowSchema,
  UserDayRowSchema,
} from "../../../gen/agentplane/analytics/v1/analytics_pb.js";
import { DomainError } from "../../platform/errors.js";
import {
  answerFormat,
  columnsOf,
  contentDisposition,
  CONTENT_TYPES,
  csvRecord,
  exportChunks,
  parseFormat,
  RowWriter,
} from "./export.js";
import { HTTP_BODY_CHUNK_BYTES } from "../../platform/body-chunks.js";

function contextOf(method: (typeof AnalyticsService.method)[keyof typeof AnalyticsService.method]): HandlerContext {
  return createHandlerContext({
    service: AnalyticsService,
    method,
    protocolName: "test",
    requestMethod: "POST",
    url: `test:///${method.name}`,
    contextValues: createContextValues(),
  });
}

const problem = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    return err instanceof DomainError ? `${err.kind} ${err.message}` : String(err);
  }
  return "no error";
};

describe("format", () => {
  it("is JSON when empty; csv and ndjson are exports; anything else is a 400 naming format", () => {
    expect(parseFormat("")).toBe("json");
    expect(parseFormat("json")).toBe("json");
    expect(parseFormat("csv")).toBe("csv");
    expect(parseFormat("ndjson")).toBe("ndjson");
    for (const bad of ["CSV", "xml", " csv", "csv,json"])
      expect(problem(() => parseFormat(bad))).toMatch(/^invalid_argument format: must be "json", "csv" or "ndjson"/);
  });

  it("is an export only on the Stream* methods: a typed Get* method names its Stream* method", () => {
    expect(answerFormat(contextOf(AnalyticsService.method.streamTools), "csv")).toBe("csv");
    expect(answerFormat(contextOf(AnalyticsService.method.getTools), "json")).toBe("json");
    expect(problem(() => answerFormat(contextOf(AnalyticsService.method.getTools), "ndjson"))).toBe(
      'invalid_argument format: "ndjson" is served by StreamTools (the REST route); GetTools answers messages',
    );
  });
});

describe("CSV", () => {
  it("quotes exactly the fields RFC 4180 requires, doubling quotes, and ends each record with CRLF", () => {
    expect(csvRecord(["plain", "with space", ""])).toBe("plain,with space,\r\n");
    expect(csvRecord(["a,b", 'say "hi"', "line\nbreak", "cr\rhere", "crlf\r\n"])).toBe(
      '"a,b","say ""hi""","line\nbreak","cr\rhere","crlf\r\n"\r\n',
    );
  });

  it("takes the columns from the row message: dotted names for nested messages, one column per breakdown", () => {
    const names = columnsOf(ToolsRowSchema).map((c) => c.name);
    expect(names).toContain("tool_autonomy_level_ratio.auto_high");
    expect(names).toContain("tool_autonomy_level_ratio.manual");
    expect(names).toContain("by_tool");
    expect(names).not.toContain("tool_autonomy_level_ratio");
    expect(names.slice(0, 3)).toEqual(["date", "tool_calls", "by_tool"]);
    // google.protobuf.Value is a value of its own (user_email: a string or null), not nested fields.
    expect(columnsOf(UserDayRowSchema).map((c) => c.name)).toContain("user_email");
    expect(columnsOf(ActivityRowSchema).map((c) => c.name)).toContain("daily_active_users_by_client");
  });

  it("writes numbers and breakdowns as JSON, strings as they are, null as an empty field", () => {
    const writer = new RowWriter("csv", UserDayRowSchema);
    const header = writer.header();
    expect(header.startsWith("user_id,user_email,date,tool_calls,")).toBe(true);
    const line = writer.row({
      user_id: "u,1",
      user_email: null,
      date: "2026-03-01",
      tool_calls: 2.5,
      languages: ["go", "c"],
    });
    expect(line.startsWith('"u,1",,2026-03-01,2.5,')).toBe(true);
    expect(line.endsWith(',"[""go"",""c""]"\r\n')).toBe(true);
    // Every row has as many fields as the header, absent values included.
    expect(line.split(",").length).toBe(header.split(",").length + 2); // the quoted comma and the array's
  });

  it("writes a stored row's JSON text as it is for NDJSON", () => {
    const writer = new RowWriter("ndjson", UserDayRowSchema);
    expect(writer.header()).toBe("");
    expect(writer.storedRow('{"user_id":"a","n":1.0}')).toBe('{"user_id":"a","n":1.0}\n');
    expect(new RowWriter("csv", UserDayRowSchema).storedRow('{"user_id":"a"}').startsWith("a,,")).toBe(true);
  });

  it("names the endpoint, grouping and dates in the attachment's file name", () => {
    const range = { start: "2026-03-01", end: "2026-03-31" };
    expect(contentDisposition("tools", "tool_name", range, "csv")).toBe(
      'attachment; filename="agentplane-tools-by-tool_name-2026-03-01-to-2026-03-31.csv"',
    );
    expect(contentDisposition("users", "", range, "ndjson")).toBe(
      'attachment; filename="agentplane-users-2026-03-01-to-2026-03-31.ndjson"',
    );
  });
});

describe("exportChunks", () => {
  async function collect(pieces: Iterable<string>, coding: "gzip" | "deflate" | null) {
    const ctx = contextOf(AnalyticsService.method.streamUsers);
    const messages = [];
    for await (const m of exportChunks(ctx, pieces, "csv", coding)) messages.push(m);
    const body = Buffer.concat(messages.map((m) => m.data as Uint8Array));
    return { ctx, messages, body };
  }
  const rows = Array.from({ length: 20_000 }, (_, i) => `user-${i},"ü, ""${i}""",${i * 7}\r\n`);
  const text = rows.join("");

  it("sends the text in chunks of at most 64 KiB, the first naming the content type", async () => {
    const { ctx, messages, body } = await collect(rows, null);
    expect(body.toString("utf8")).toBe(text);
    expect(messages.length).toBeGreaterThan(2);
    expect(messages.every((m) => (m.data as Uint8Array).length <= HTTP_BODY_CHUNK_BYTES)).toBe(true);
    expect(messages[0]!.contentType).toBe(CONTENT_TYPES.csv);
    expect(messages.slice(1).every((m) => m.contentType === "")).toBe(true);
    expect(ctx.responseHeader.get("content-encoding")).toBeNull();
  });

  it("cuts a single piece larger than a chunk (a stored row of megabytes)", async () => {
    const { messages, body } = await collect([text], null);
    expect(body.toString("utf8")).toBe(text);
    expect(messages.every((m) => (m.data as Uint8Array).length <= HTTP_BODY_CHUNK_BYTES)).toBe(true);
  });

  it("compresses to the client's coding from 8 KiB, as one stream across the chunks", async () => {
    for (const coding of ["gzip", "deflate"] as const) {
      const { ctx, messages, body } = await collect(rows, coding);
      expect(ctx.responseHeader.get("content-encoding")).toBe(coding);
      expect((coding === "gzip" ? gunzipSync : inflateSync)(body).toString("utf8")).toBe(text);
      expect(body.length).toBeLessThan(Buffer.byteLength(text) / 3);
      expect(messages[0]!.contentType).toBe(CONTENT_TYPES.csv);
    }
  });

  it("leaves a short export uncompressed, and sends an empty one as one message", async () => {
    const small = await collect(["a,b\r\n", "1,2\r\n"], "gzip");
    expect(small.ctx.responseHeader.get("content-encoding")).toBeNull();
    expect(small.body.toString()).toBe("a,b\r\n1,2\r\n");
    const empty = await collect([], "gzip");
    expect(empty.messages).toHaveLength(1);
    expect(empty.messages[0]!.contentType).toBe(CONTENT_TYPES.csv);
    expect(empty.body.length).toBe(0);
  });
});
