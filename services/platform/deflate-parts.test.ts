import { randomBytes } from "node:crypto";
import { gunzipSync, inflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  adler32,
  adler32Combine,
  bodyLength,
  bodyText,
  crc32,
  crc32Combine,
  deflatePart,
  gzipStream,
  inflatePart,
  storedPart,
  StreamingEncoder,
  zlibStream,
  type BodyPart,
} from "./deflate-parts.js";

const inflate = (chunks: Buffer[]) => inflateSync(Buffer.concat(chunks)).toString("utf8");

describe("adler32", () => {
  it("matches the published value", () => {
    // RFC 1950's checksum of "Wikipedia", the example everyone quotes.
    expect(adler32(Buffer.from("Wikipedia"))).toBe(0x11e60398);
    expect(adler32(Buffer.alloc(0))).toBe(1);
  });

  it("combines the checksums of two pieces into the checksum of both", () => {
    for (const [n, m] of [
      [0, 10],
      [10, 0],
      [1, 1],
      [5551, 5553],
      [100_000, 70_000],
      [65521, 65521 * 3 + 7],
    ]) {
      const a = randomBytes(n!);
      const b = randomBytes(m!);
      expect(adler32Combine(adler32(a), adler32(b), b.length)).toBe(adler32(Buffer.concat([a, b])));
    }
  });

  it("handles bytes of 0xff over long runs (the sums' reduction)", () => {
    const a = Buffer.alloc(200_000, 0xff);
    const b = Buffer.alloc(123_457, 0xff);
    expect(adler32Combine(adler32(a), adler32(b), b.length)).toBe(adler32(Buffer.concat([a, b])));
  });
});

describe("crc32", () => {
  it("matches the published check value", () => {
    // The CRC-32 catalogue's check: the CRC of "123456789".
    expect(crc32("123456789")).toBe(0xcbf43926);
    expect(crc32(Buffer.alloc(0))).toBe(0);
  });

  it("combines the CRCs of two pieces into the CRC of both", () => {
    for (const [n, m] of [
      [0, 10],
      [10, 0],
      [0, 0],
      [1, 1],
      [3, 5],
      [100_000, 70_000],
      [65_536, 1],
      [1, 1_048_577],
    ]) {
      const a = randomBytes(n!);
      const b = randomBytes(m!);
      expect(crc32Combine(crc32(a), crc32(b), b.length)).toBe(crc32(Buffer.concat([a, b])));
    }
  });
});

describe("zlibStream", () => {
  const row = (i: number) =>
    JSON.stringify({
      date: `2026-03-${String(i).padStart(2, "0")}`,
      by_user: Array.from({ length: 200 }, (_, u) => ({
        user_id: `u${u}`,
        email: `dév${u}@example.test`,
        billable_tokens: u * i,
      })),
    });

  it("concatenates parts compressed ahead of time with text parts into one valid stream", () => {
    const parts: BodyPart[] = [
      '{"data":[',
      deflatePart(row(1)),
      ",",
      deflatePart(row(2)),
      ",",
      row(3),
      ",",
      deflatePart(""),
      deflatePart(row(4), 9),
      '],"meta":{}}',
    ];
    const text = `{"data":[${row(1)},${row(2)},${row(3)},${row(4)}],"meta":{}}`;
    expect(JSON.parse(text).data).toHaveLength(4);
    expect(inflatePart(parts[1] as ReturnType<typeof deflatePart>)).toBe(row(1));
    expect(inflate(zlibStream(parts))).toBe(text);
    expect(bodyText(parts)).toBe(text);
    expect(bodyLength(parts)).toBe(Buffer.byteLength(text));
  });

  it("takes parts given as UTF-8 bytes", () => {
    const bytes = Buffer.from(row(5), "utf8");
    const parts: BodyPart[] = ["[", bytes, ",", Buffer.from("[1]"), ",", deflatePart(row(6)), "]"];
    const text = `[${row(5)},[1],${row(6)}]`;
    expect(inflate(zlibStream(parts))).toBe(text);
    expect(bodyText(parts)).toBe(text);
    expect(bodyLength(parts)).toBe(Buffer.byteLength(text));
  });

  it("is much smaller than the text for repetitive JSON", () => {
    const parts = Array.from({ length: 20 }, (_, i) => deflatePart(row(i + 1)));
    const size = zlibStream(parts).reduce((n, c) => n + c.length, 0);
    expect(size * 4).toBeLessThan(bodyLength(parts));
  });

  it("stores text parts too long for one stored block in several", () => {
    const big = randomBytes(150_000).toString("base64"); // 200,000 bytes: four stored blocks
    const stored = storedPart(Buffer.from(big));
    expect(inflate(zlibStream(["[", stored, "]"]))).toBe(`[${big}]`);
    expect(inflate(zlibStream([big]))).toBe(big);
  });

  it("makes an empty body a valid empty stream", () => {
    expect(inflate(zlibStream([]))).toBe("");
    expect(inflate(zlibStream(["", deflatePart("")]))).toBe("");
  });
});

describe("gzipStream", () => {
  const gunzip = (chunks: Buffer[]) => gunzipSync(Buffer.concat(chunks)).toString("utf8");
  const row = (i: number) =>
    JSON.stringify({
      date: `2026-04-${String(i).padStart(2, "0")}`,
      by_model: Array.from({ length: 50 }, (_, m) => ({ model_id: `m${m}`, tokens: m * i, note: "é→✓" })),
    });

  it("wraps the same parts as the zlib stream in one gzip member", () => {
    const parts: BodyPart[] = [
      '{"data":[',
      deflatePart(row(1)),
      ",",
      row(2),
      ",",
      deflatePart(""),
      Buffer.from("[1]"),
      ",",
      deflatePart(row(3), 9),
      '],"meta":{}}',
    ];
    const text = `{"data":[${row(1)},${row(2)},[1],${row(3)}],"meta":{}}`;
    expect(gunzip(gzipStream(parts))).toBe(text);
    expect(inflate(zlibStream(parts))).toBe(text);
    const stream = Buffer.concat(gzipStream(parts));
    // The trailer: CRC-32 and ISIZE, little-endian.
    expect(stream.readUInt32LE(stream.length - 8)).toBe(crc32(text));
    expect(stream.readUInt32LE(stream.length - 4)).toBe(Buffer.byteLength(text));
  });

  it("computes the CRC of a part stored without one from its inflated text", () => {
    const part = deflatePart(row(4));
    const withoutCrc = { ...part, crc32: null };
    expect(gunzip(gzipStream(["[", withoutCrc, ",", part, "]"]))).toBe(`[${row(4)},${row(4)}]`);
  });

  it("makes an empty body a valid empty member", () => {
    expect(gunzip(gzipStream([]))).toBe("");
    expect(gunzip(gzipStream(["", deflatePart("")]))).toBe("");
  });
});

describe("StreamingEncoder", () => {
  // Pieces of every size class: empty, stored (under 1 KiB), compressed, incompressible, and
  // multi-byte UTF-8 text, so the checksums and ISIZE count bytes, not characters.
  const pieces = [
    Buffer.from("id,name\r\n"),
    Buffer.alloc(0),
    Buffer.from('ü,"quoted"\r\n'.repeat(500)),
    randomBytes(70_000),
    Buffer.from("x"),
  ];
  const whole = Buffer.concat(pieces);

  for (const coding of ["gzip", "deflate"] as const) {
    it(`writes one ${coding} stream from pieces given one at a time`, () => {
      const encoder = new StreamingEncoder(coding);
      const out = [...pieces.flatMap((p) => encoder.push(p)), ...encoder.end()];
      const decoded = (coding === "gzip" ? gunzipSync : inflateSync)(Buffer.concat(out));
      expect(decoded.equals(whole)).toBe(true);
    });
  }

  it("ends an empty body as a valid stream", () => {
    const encoder = new StreamingEncoder("gzip");
    expect(gunzipSync(Buffer.concat(encoder.end())).length).toBe(0);
  });
});
