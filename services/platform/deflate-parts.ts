// A response body assembled from parts, some of them compressed ahead of time, into one
// `Content-Encoding: deflate` stream (RFC 9110 §8.4.1.2: the zlib format of RFC 1950) or one
// `Content-Encoding: gzip` stream (§8.4.1.3: RFC 1952). Both wrap the same raw deflate blocks.
//
// Why: a 90-day /tokens answer for a large organization is tens to hundreds of megabytes of JSON,
// made of day rows that never change once rolled up. The rollup compresses each day's row once;
// a request then sends the stored compressed bytes instead of compressing (or even reading) the
// text again. That works because each part is compressed as a self-contained run of deflate
// blocks ending on a full flush (byte-aligned, no back-references across the boundary, not the
// final block), so parts can be concatenated in any order; the stream then ends with an empty
// final block and the checksum of the whole text (zlib: Adler-32; gzip: CRC-32 and the length),
// which is combined from each part's own checksum and length without touching the text (zlib's
// adler32_combine and crc32_combine).
import { constants, crc32 as zlibCrc32, deflateRawSync, inflateRawSync } from "node:zlib";

/** The content codings a body of parts can be sent in. */
export type ContentCoding = "deflate" | "gzip";

/** A part compressed ahead of time: raw deflate blocks ending on a full flush. */
export interface DeflatedPart {
  readonly deflated: Buffer;
  /** Adler-32 of the part's UTF-8 text. */
  readonly adler32: number;
  /**
   * CRC-32 of the part's UTF-8 text; null for parts stored before it was kept (migration 0014),
   * whose CRC a gzip stream computes from the inflated text.
   */
  readonly crc32: number | null;
  /** Length of the part's UTF-8 text in bytes. */
  readonly length: number;
}

/** Text, the UTF-8 bytes of text, or a part compressed ahead of time. */
export type BodyPart = string | Buffer | DeflatedPart;

export function isDeflated(part: BodyPart): part is DeflatedPart {
  return typeof part !== "string" && !Buffer.isBuffer(part);
}

const BASE = 65521;
/** The most bytes that can be summed before the sums must be reduced modulo BASE (zlib's NMAX). */
const NMAX = 5552;

export function adler32(data: Uint8Array, start = 1): number {
  let a = start & 0xffff;
  let b = (start >>> 16) & 0xffff;
  let i = 0;
  while (i < data.length) {
    const end = Math.min(i + NMAX, data.length);
    for (; i < end; i++) {
      a += data[i]!;
      b += a;
    }
    a %= BASE;
    b %= BASE;
  }
  return ((b << 16) | a) >>> 0;
}

/** The Adler-32 of A followed by B, from A's and B's checksums and B's length. */
export function adler32Combine(adlerA: number, adlerB: number, lengthB: number): number {
  const rem = lengthB % BASE;
  let sum1 = adlerA & 0xffff;
  let sum2 = (rem * sum1) % BASE;
  sum1 += (adlerB & 0xffff) + BASE - 1;
  sum2 += ((adlerA >>> 16) & 0xffff) + ((adlerB >>> 16) & 0xffff) + BASE - rem;
  if (sum1 >= BASE) sum1 -= BASE;
  if (sum1 >= BASE) sum1 -= BASE;
  if (sum2 >= BASE * 2) sum2 -= BASE * 2;
  if (sum2 >= BASE) sum2 -= BASE;
  return ((sum2 << 16) | sum1) >>> 0;
}

/** CRC-32 (the gzip and PNG polynomial, reflected), as zlib computes it. */
export function crc32(data: Uint8Array | string, start = 0): number {
  return zlibCrc32(data, start) >>> 0;
}

const CRC_POLY = 0xedb88320;

/** a(x)·b(x) modulo the CRC polynomial, both in the reflected bit order (zlib's multmodp). */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ CRC_POLY : b >>> 1;
  }
  return p >>> 0;
}

/** X2N[k] = x^(2^k) modulo the polynomial (zlib's x2n_table). */
const X2N: number[] = (() => {
  const table: number[] = [];
  let p = 0x40000000; // x^1
  table.push(p);
  for (let k = 1; k < 32; k++) table.push((p = multModP(p, p)));
  return table;
})();

/** x^(n·2^k) modulo the polynomial (zlib's x2nmodp). */
function x2nModP(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multModP(X2N[k & 31]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** The CRC-32 of A followed by B, from A's and B's CRCs and B's length (zlib's crc32_combine). */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  return (multModP(x2nModP(lengthB, 3), crcA >>> 0) ^ crcB) >>> 0;
}

/** Compresses a part so that it can be concatenated with others (see the file comment). */
export function deflatePart(text: string | Buffer, level: number = constants.Z_DEFAULT_COMPRESSION): DeflatedPart {
  const bytes = typeof text === "string" ? Buffer.from(text, "utf8") : text;
  return {
    deflated: deflateRawSync(bytes, { level, finishFlush: constants.Z_FULL_FLUSH }),
    adler32: adler32(bytes),
    crc32: crc32(bytes),
    length: bytes.length,
  };
}

/** The UTF-8 bytes of a compressed part's text (its blocks end on a flush, not a final block). */
function inflatedBytes(part: DeflatedPart): Buffer {
  return inflateRawSync(part.deflated, { finishFlush: constants.Z_SYNC_FLUSH });
}

/** The part with its CRC-32: computed from its text when it was stored without one (before migration 0014). */
export function withCrc32(part: DeflatedPart): DeflatedPart {
  if (part.crc32 !== null) return part;
  return { ...part, crc32: crc32(inflatedBytes(part)) };
}

/** The text of a compressed part. */
export function inflatePart(part: DeflatedPart): string {
  return inflatedBytes(part).toString("utf8");
}

/** zlib header: deflate with a 32 KiB window, default level; (0x78 << 8 | 0x9c) % 31 === 0. */
const ZLIB_HEADER = Buffer.from([0x78, 0x9c]);
/** An empty final fixed-Huffman block: what ends the stream after the last full flush. */
const FINAL_BLOCK = Buffer.from([0x03, 0x00]);

/** Text shorter than this goes in stored (uncompressed) blocks: setting up a compressor costs more. */
const STORE_BELOW = 1024;

/**
 * A part as stored deflate blocks (RFC 1951 §3.2.4): each a byte with BFINAL=0 and BTYPE=00
 * (the previous part ended byte-aligned, so no padding bits precede the length), LEN and NLEN,
 * then the bytes as they are.
 */
export function storedPart(bytes: Buffer): DeflatedPart {
  const blocks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += 0xffff) {
    const chunk = bytes.subarray(at, at + 0xffff);
    const header = Buffer.from([
      0x00,
      chunk.length & 0xff,
      chunk.length >>> 8,
      ~chunk.length & 0xff,
      (~chunk.length >>> 8) & 0xff,
    ]);
    blocks.push(header, chunk);
  }
  return { deflated: Buffer.concat(blocks), adler32: adler32(bytes), crc32: crc32(bytes), length: bytes.length };
}

/** How a stream's checksum of the whole text is made from its parts'. */
interface Checksum {
  readonly initial: number;
  of(part: DeflatedPart): number;
  combine(before: number, part: number, partLength: number): number;
}

const ADLER32: Checksum = { initial: 1, of: (p) => p.adler32, combine: adler32Combine };
const CRC32: Checksum = {
  initial: 0,
  of: (p) => withCrc32(p).crc32!,
  combine: crc32Combine,
};

/**
 * The parts as raw deflate blocks ending on a full flush, and the checksum of their text; text
 * parts are compressed at `level` (fast by default: per request).
 */
function deflateBlocks(
  parts: readonly BodyPart[],
  level: number,
  checksum: Checksum,
): { blocks: Buffer[]; checksum: number } {
  const blocks: Buffer[] = [];
  let sum = checksum.initial;
  const add = (p: DeflatedPart) => {
    if (p.length === 0) return;
    blocks.push(p.deflated);
    sum = checksum.combine(sum, checksum.of(p), p.length);
  };
  const addBytes = (bytes: Buffer) => add(bytes.length < STORE_BELOW ? storedPart(bytes) : deflatePart(bytes, level));
  let text = "";
  const flushText = () => {
    if (text === "") return;
    addBytes(Buffer.from(text, "utf8"));
    text = "";
  };
  for (const part of parts) {
    if (typeof part === "string") {
      text += part; // adjacent text parts travel as one
      continue;
    }
    flushText();
    if (Buffer.isBuffer(part)) addBytes(part);
    else add(part);
  }
  flushText();
  return { blocks, checksum: sum };
}

/** The body as one zlib stream (Content-Encoding: deflate). */
export function zlibStream(parts: readonly BodyPart[], level = 1): Buffer[] {
  const { blocks, checksum } = deflateBlocks(parts, level, ADLER32);
  const trailer = Buffer.alloc(4);
  trailer.writeUInt32BE(checksum);
  return [ZLIB_HEADER, ...blocks, FINAL_BLOCK, trailer];
}

/**
 * gzip member header (RFC 1952 §2.3): magic, CM=8 (deflate), no flags, MTIME 0 (none: the body
 * is not a file), XFL 0, OS 255 (unknown).
 */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff]);

/** The body as one gzip member (Content-Encoding: gzip). */
export function gzipStream(parts: readonly BodyPart[], level = 1): Buffer[] {
  const { blocks, checksum } = deflateBlocks(parts, level, CRC32);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(checksum, 0);
  trailer.writeUInt32LE(bodyLength(parts) % 2 ** 32, 4); // ISIZE: the length modulo 2^32
  return [GZIP_HEADER, ...blocks, FINAL_BLOCK, trailer];
}

/** The body in a content coding. */
export function encodedStream(parts: readonly BodyPart[], coding: ContentCoding): Buffer[] {
  return coding === "gzip" ? gzipStream(parts) : zlibStream(parts);
}

/** The body as text (a compressed part is inflated: only when a client does not take deflate). */
export function bodyText(parts: readonly BodyPart[]): string {
  return parts.map(partText).join("");
}

/** A part as text or bytes, inflated if it was compressed. */
export function plainPart(part: BodyPart): string | Buffer {
  return isDeflated(part) ? inflatePart(part) : part;
}

function partText(part: BodyPart): string {
  const p = plainPart(part);
  return typeof p === "string" ? p : p.toString("utf8");
}

/** Length of the body's UTF-8 text in bytes. */
export function bodyLength(parts: readonly BodyPart[]): number {
  let n = 0;
  for (const p of parts) n += typeof p === "string" ? Buffer.byteLength(p) : p.length; // a compressed part: its text's length
  return n;
}

/**
 * A body compressed as it is produced, for answers whose whole is never at hand (the analytics
 * exports, read a batch of rows at a time): each piece of text becomes deflate blocks ending on a
 * full flush, as a stored part does, and the checksum is combined piece by piece, so the encoder
 * holds nothing but the running checksum and length.
 */
export class StreamingEncoder {
  private readonly checksum: Checksum;
  private sum: number;
  private length = 0;
  private started = false;

  constructor(
    readonly coding: ContentCoding,
    private readonly level = 1,
  ) {
    this.checksum = coding === "gzip" ? CRC32 : ADLER32;
    this.sum = this.checksum.initial;
  }

  /** The encoded bytes of the next piece (the stream's header before the first). */
  push(bytes: Buffer): Buffer[] {
    const out: Buffer[] = [];
    if (!this.started) {
      out.push(this.coding === "gzip" ? GZIP_HEADER : ZLIB_HEADER);
      this.started = true;
    }
    if (bytes.length === 0) return out;
    const blocks =
      bytes.length < STORE_BELOW
        ? storedPart(bytes).deflated
        : deflateRawSync(bytes, { level: this.level, finishFlush: constants.Z_FULL_FLUSH });
    const own = this.coding === "gzip" ? crc32(bytes) : adler32(bytes);
    this.sum = this.checksum.combine(this.sum, own, bytes.length);
    this.length += bytes.length;
    out.push(blocks);
    return out;
  }

  /** The end of the stream: the final block and the trailer. */
  end(): Buffer[] {
    const out = this.push(Buffer.alloc(0));
    if (this.coding === "gzip") {
      const trailer = Buffer.alloc(8);
      trailer.writeUInt32LE(this.sum, 0);
      trailer.writeUInt32LE(this.length % 2 ** 32, 4);
      out.push(FINAL_BLOCK, trailer);
    } else {
      const trailer = Buffer.alloc(4);
      trailer.writeUInt32BE(this.sum);
      out.push(FINAL_BLOCK, trailer);
    }
    return out;
  }
}
