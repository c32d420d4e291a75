// A response body assembled from parts, some of them compressed ahead of time, into one
// `Content-Encoding: deflate` stream (RFC 9110 §8.4.1.2: the zlib format of RFC 1950).
//
// Why: a 90-day /tokens answer for a large organization is tens to hundreds of megabytes of JSON,
// made of day rows that never change once rolled up. The rollup compresses each day's row once;
// a request then sends the stored compressed bytes instead of compressing (or even reading) the
// text again. That works because each part is compressed as a self-contained run of deflate
// blocks ending on a full flush (byte-aligned, no back-references across the boundary, not the
// final block), so parts can be concatenated in any order; the stream then ends with an empty
// final block and the Adler-32 of the whole text, which is combined from each part's own
// checksum and length without touching the text (zlib's adler32_combine).
import { constants, deflateRawSync, inflateRawSync } from "node:zlib";

/** A part compressed ahead of time: raw deflate blocks ending on a full flush. */
export interface DeflatedPart {
  readonly deflated: Buffer;
  /** Adler-32 of the part's UTF-8 text. */
  readonly adler32: number;
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

/** Compresses a part so that it can be concatenated with others (see the file comment). */
export function deflatePart(text: string | Buffer, level: number = constants.Z_DEFAULT_COMPRESSION): DeflatedPart {
  const bytes = typeof text === "string" ? Buffer.from(text, "utf8") : text;
  return {
    deflated: deflateRawSync(bytes, { level, finishFlush: constants.Z_FULL_FLUSH }),
    adler32: adler32(bytes),
    length: bytes.length,
  };
}

/** The text of a compressed part. */
export function inflatePart(part: DeflatedPart): string {
  return inflateRawSync(part.deflated, { finishFlush: constants.Z_SYNC_FLUSH }).toString("utf8");
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
    const header = Buffer.from([0x00, chunk.length & 0xff, chunk.length >>> 8, ~chunk.length & 0xff, (~chunk.length >>> 8) & 0xff]);
    blocks.push(header, chunk);
  }
  return { deflated: Buffer.concat(blocks), adler32: adler32(bytes), length: bytes.length };
}

/** The body as one zlib stream; text parts are compressed at `level` (fast by default: per request). */
export function zlibStream(parts: readonly BodyPart[], level = 1): Buffer[] {
  const out: Buffer[] = [ZLIB_HEADER];
  let checksum = 1;
  const add = (p: DeflatedPart) => {
    if (p.length === 0) return;
    out.push(p.deflated);
    checksum = adler32Combine(checksum, p.adler32, p.length);
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
  const trailer = Buffer.alloc(4);
  trailer.writeUInt32BE(checksum);
  out.push(FINAL_BLOCK, trailer);
  return out;
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
