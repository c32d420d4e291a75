// The decoded-size check (decoded-size.ts, json-objects.ts) for the requests Connect's handler
// decodes: gRPC-Web, Connect (unary and streaming), gRPC with the JSON codec, and binary gRPC
// to streaming methods (or every method with GRPC_UNARY_FAST_PATH off).
//
// Why here: Connect's handler reads, decompresses and decodes a request message with no hook in
// between, so a message of empty elements would be built before any interceptor saw it. This
// wraps the request body the handler reads: each message is checked as it completes (an
// envelope; a Connect unary body whole) and its bytes are passed on unchanged, so the handler
// does everything else as before (limits, decompression, errors in its protocol's form). A
// message out of proportion ends the body with INVALID_ARGUMENT, which the handler answers; one
// admitted has its estimate held for the call (HoldMessage: request-memory.ts), and one that does
// not fit beside those held ends it with the count's refusal.
//
// Compressed messages are decompressed here to be checked, within the same message limit, and
// again by the handler: this costs a second decompression for compressed calls on this path
// only (binary gRPC unary calls, the usual ones, are on the fast path: grpc-unary.ts). Bytes this
// cannot make sense of (an unknown content type or encoding, a broken envelope or compression)
// are passed on unchecked, for the handler to refuse in its own words.
import type { BinaryReadOptions, DescMessage } from "@bufbuild/protobuf";
import type { Compression, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { refuseOutOfProportion, refuseTooManyJsonValues } from "./decode-errors.js";

/** What each request's messages are checked against. */
export interface BodyGuardMethod {
  readonly input: DescMessage;
  readonly binaryOptions: Partial<BinaryReadOptions> | undefined;
  /** The method's message limit (readMaxBytes), decompressed. */
  readonly maxBytes: number;
}

/** Holds a message's estimated decoded size for its call (request-memory.ts); throws to refuse it. */
export type HoldMessage = (estimate: number) => void;

type Framing =
  /**
   * Messages in 5-byte envelopes; `encodingHeader` names the compression of flagged ones, and
   * envelopes with a `control` flag bit carry no message (0 for gRPC: its handler decodes every
   * envelope, whatever its flags).
   */
  | { readonly enveloped: true; readonly json: boolean; readonly encodingHeader: string; readonly control: number }
  /** Connect unary: the body is the message, compressed per content-encoding. */
  | { readonly enveloped: false; readonly json: boolean };

const ENVELOPED = /^application\/(grpc|grpc-web|connect)(?:\+(proto|json))?(?:;.*)?$/i;
const CONNECT_UNARY = /^application\/(proto|json)(?:;.*)?$/i;
const COMPRESSED_FLAG = 0b01;
/** Connect streaming's end of stream and gRPC-Web's trailers: the only envelopes that hold no message. */
const CONTROL_FLAG = { connect: 0b10, "grpc-web": 0x80, grpc: 0 } as const;

function framingOf(contentType: string): Framing | undefined {
  const enveloped = ENVELOPED.exec(contentType);
  if (enveloped) {
    const json = enveloped[2]?.toLowerCase() === "json";
    const protocol = enveloped[1]!.toLowerCase();
    return {
      enveloped: true,
      json,
      encodingHeader: protocol === "connect" ? "connect-content-encoding" : "grpc-encoding",
      control: CONTROL_FLAG[protocol as keyof typeof CONTROL_FLAG],
    };
  }
  const unary = CONNECT_UNARY.exec(contentType);
  if (unary) return { enveloped: false, json: unary[1]!.toLowerCase() === "json" };
  return undefined;
}

/**
 * The request with its body checked message by message as the handler reads it; the request
 * itself when its content type is none this knows (the handler refuses it).
 */
export function guardRequestBody(
  req: UniversalServerRequest,
  method: BodyGuardMethod,
  compressions: readonly Compression[],
  hold: HoldMessage,
): UniversalServerRequest {
  const framing = framingOf(req.header.get("content-type") ?? "");
  const body = req.body;
  if (framing === undefined || !(Symbol.asyncIterator in Object(body))) return req;
  const codingOf = (name: string | null) =>
    name === null || name === "identity" ? null : (compressions.find((c) => c.name === name) ?? undefined);
  const check = async (data: Uint8Array, coding: Compression | null | undefined) => {
    // An encoding the handler does not have, or bytes that do not decompress: its to refuse.
    if (coding === undefined) return;
    let bytes = data;
    if (coding !== null) {
      try {
        bytes = await coding.decompress(data, method.maxBytes);
      } catch {
        return;
      }
    }
    hold(
      framing.json ? refuseTooManyJsonValues(bytes) : refuseOutOfProportion(method.input, bytes, method.binaryOptions),
    );
  };
  const chunks = body as AsyncIterable<Uint8Array>;
  return {
    ...req,
    body: framing.enveloped
      ? checkedEnvelopes(chunks, method.maxBytes, framing.control, (data, compressed) =>
          check(data, compressed ? codingOf(req.header.get(framing.encodingHeader)) : null),
        )
      : checkedWhole(chunks, method.maxBytes, (data) => check(data, codingOf(req.header.get("content-encoding")))),
  };
}

/**
 * The body's chunks, passed on once the envelope they complete is checked. Past the message
 * limit (the handler refuses that from the envelope's header) nothing more is checked. Chunks are
 * joined only once an envelope is complete, so a message arriving in many small chunks is copied
 * once, not once per chunk.
 */
async function* checkedEnvelopes(
  chunks: AsyncIterable<Uint8Array>,
  maxBytes: number,
  control: number,
  check: (data: Uint8Array, compressed: boolean) => Promise<void>,
): AsyncIterable<Uint8Array> {
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  /** The held bytes that complete the first held envelope; -1 until its header has come. */
  let needed = -1;
  let unchecked = false;
  for await (const chunk of chunks) {
    if (unchecked) {
      yield chunk;
      continue;
    }
    held.push(chunk);
    heldBytes += chunk.length;
    if (needed < 0 && heldBytes >= 5) {
      const length = lengthPrefix(held);
      if (length > maxBytes) {
        unchecked = true;
        yield* held;
        held = [];
        heldBytes = 0;
        continue;
      }
      needed = 5 + length;
    }
    if (needed < 0 || heldBytes < needed) continue;
    // One envelope at least is complete: every complete one in what is held is checked; what
    // the checks covered is passed on.
    const all = held.length === 1 ? held[0]! : Buffer.concat(held, heldBytes);
    let offset = 0;
    while (all.length - offset >= 5) {
      const flags = all[offset]!;
      const length = new DataView(all.buffer, all.byteOffset + offset + 1, 4).getUint32(0);
      if (length > maxBytes) {
        unchecked = true;
        break;
      }
      if (all.length - offset - 5 < length) break;
      if ((flags & control) === 0)
        await check(all.subarray(offset + 5, offset + 5 + length), (flags & COMPRESSED_FLAG) !== 0);
      offset += 5 + length;
    }
    if (unchecked) {
      yield all;
      held = [];
      heldBytes = 0;
      continue;
    }
    if (offset > 0) yield all.subarray(0, offset);
    const rest = all.subarray(offset);
    held = rest.length === 0 ? [] : [rest];
    heldBytes = rest.length;
    needed = heldBytes >= 5 ? 5 + lengthPrefix(held) : -1;
  }
  // A cut envelope: the handler's to refuse.
  if (heldBytes > 0) yield held.length === 1 ? held[0]! : Buffer.concat(held, heldBytes);
}

/** The length in the first envelope's header, read across the held chunks (5 bytes at least). */
function lengthPrefix(held: readonly Uint8Array[]): number {
  let length = 0;
  let index = 0;
  for (const chunk of held)
    for (let i = 0; i < chunk.length && index < 5; i++, index++) if (index > 0) length = length * 256 + chunk[i]!;
  return length;
}

/** The body whole, checked, then passed on; past the message limit, passed on unchecked. */
async function* checkedWhole(
  chunks: AsyncIterable<Uint8Array>,
  maxBytes: number,
  check: (data: Uint8Array) => Promise<void>,
): AsyncIterable<Uint8Array> {
  const held: Uint8Array[] = [];
  let heldBytes = 0;
  let unchecked = false;
  // for await: when the handler stops reading, the request's own iterator is ended too.
  for await (const chunk of chunks) {
    if (unchecked) {
      yield chunk;
      continue;
    }
    held.push(chunk);
    heldBytes += chunk.length;
    if (heldBytes > maxBytes) {
      // The handler refuses it by its limit: hand over what came and the rest as it comes.
      unchecked = true;
      yield* held;
    }
  }
  if (unchecked) return;
  const whole = held.length === 1 ? held[0]! : Buffer.concat(held, heldBytes);
  await check(whole);
  yield whole;
}
