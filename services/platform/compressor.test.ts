import type { OutgoingHttpHeaders } from "node:http";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { compressLikeEnvoy, compressorChoosesGzip } from "./compressor.js";

describe("compressorChoosesGzip: Envoy's choice with gzip its only compressor", () => {
  it.each([
    ["gzip", true],
    ["gzip, deflate, br, zstd", true],
    ["deflate, gzip;q=0.5", true], // deflate is not offered: gzip is the best offered
    ["br", false],
    ["*", true],
    ["gzip;q=0, *", false],
    ["identity, gzip", false], // equal q: the earlier entry wins
    ["gzip, identity", true],
    ["identity;q=0.5, gzip", true],
    ["gzip;q=0.5, identity", false],
    ["gzip;q=0", false],
    ["gzip;q=abc", false], // a q-value that does not parse drops the entry
    ["GZIP", false], // names as written
    ["", false],
  ])("%j → %s", (header, expected) => {
    expect(compressorChoosesGzip(header)).toBe(expected);
  });

  it("nothing without the header", () => {
    expect(compressorChoosesGzip(undefined)).toBe(false);
  });
});

describe("compressLikeEnvoy", () => {
  const big = JSON.stringify({ data: "x".repeat(9000) });
  const headersOf = (text: string, extra: OutgoingHttpHeaders = {}): OutgoingHttpHeaders => ({
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...extra,
  });

  it("gzips a JSON answer from 8 KiB for a client that takes gzip, with Vary and a weak ETag", () => {
    const headers = headersOf(big, { etag: '"v1"' });
    const body = compressLikeEnvoy("gzip", headers, big);
    expect(gunzipSync(body as Buffer).toString()).toBe(big);
    expect(headers).toMatchObject({
      "content-encoding": "gzip",
      "content-length": (body as Buffer).length,
      vary: "Accept-Encoding",
      etag: 'W/"v1"',
    });
  });

  it("names Vary on a compressible answer the client takes as it is", () => {
    const headers = headersOf(big, { etag: '"v1"', vary: "Origin" });
    expect(compressLikeEnvoy("identity", headers, big)).toBe(big);
    expect(headers).toMatchObject({ vary: "Origin, Accept-Encoding", etag: '"v1"' });
    expect(headers["content-encoding"]).toBeUndefined();
  });

  it("leaves alone a small answer, another type, an encoded one and Cache-Control: no-transform", () => {
    const small = '{"a":1}';
    for (const [text, extra] of [
      [small, {}],
      [big, { "content-type": "text/csv" }],
      [big, { "content-encoding": "br" }],
      [big, { "cache-control": "private, no-transform" }],
    ] as const) {
      const headers = headersOf(text, extra);
      expect(compressLikeEnvoy("gzip", headers, text)).toBe(text);
      expect(headers.vary).toBeUndefined();
    }
  });
});
