// A request message that does not decode is the client's bad input, not our failure.
//
// connect-es answers a binary message that does not parse (a truncated varint, a wrong wire
// type, invalid UTF-8 in a string field, nesting past its limit) and a compressed message it
// cannot decompress with INTERNAL, from inside its protocol handlers where no interceptor sees
// it ("parse binary: premature EOF", "decompression failed"). This maps exactly those answers to
// INVALID_ARGUMENT, in whichever protocol carried them: gRPC (trailers, or a trailers-only
// header), gRPC-Web (the trailer frame), Connect unary (status and JSON body) and Connect
// streaming (the end-of-stream frame). Everything else passes through untouched.
import { Code, ConnectError } from "@connectrpc/connect";
import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { endStreamFlag } from "@connectrpc/connect/protocol-connect";
import { trailerFlag, trailerParse, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import type { BinaryReadOptions, DescMessage } from "@bufbuild/protobuf";
import { DECODE_FACTOR, DECODE_SLACK_BYTES, decodedSize, decodedSizeLimit } from "./decoded-size.js";
import { possibleMessagesHeap, tooManyJsonValuesMessage } from "./json-objects.js";

const DECODE_FAILURE =
  /^(parse binary: |received compressed envelope, but do not know how to decompress$|decompression failed$)/;
const INTERNAL = "13";
const INVALID_ARGUMENT = "3";

const message = (original: string) => `request: the message does not decode (${original})`;

/**
 * Refuses, INVALID_ARGUMENT, a binary message that would take far more memory decoded than its
 * bytes (decoded-size.ts), naming where the estimate passed the limit. The gRPC listeners (both
 * paths) and the REST edge (for the message Envoy would send) call it before decoding. Returns the
 * estimate of a message it admits, for the process's count (request-memory.ts).
 */
export function refuseOutOfProportion(
  desc: DescMessage,
  bytes: Uint8Array,
  binaryOptions?: Partial<BinaryReadOptions>,
): number {
  const size = decodedSize(desc, bytes, decodedSizeLimit(bytes.length), binaryOptions);
  if (size.within) return size.bytes;
  throw new ConnectError(
    `request: the message would take more than ${decodedSizeLimit(bytes.length)} bytes once decoded ` +
      `(${DECODE_FACTOR} times its ${bytes.length} bytes, and ${DECODE_SLACK_BYTES}), passing it in ${size.field}: ` +
      "send fewer elements, or elements that carry values",
    Code.InvalidArgument,
  );
}

/**
 * Refuses, INVALID_ARGUMENT, a JSON message whose values are too many for its bytes
 * (json-objects.ts), before it is parsed. Returns the estimate of a message it admits: its
 * possible messages' heap and its characters at two bytes each, as decoded-size.ts counts a
 * string's (0 for a short one, which is not counted).
 */
export function refuseTooManyJsonValues(json: Uint8Array): number {
  const possible = possibleMessagesHeap(json);
  if (possible === undefined) return 0;
  if (possible.heap > decodedSizeLimit(json.length))
    throw new ConnectError(tooManyJsonValuesMessage(possible.count, json.length), Code.InvalidArgument);
  return possible.heap + 2 * json.length;
}

/**
 * The same for an error not yet written (the unary gRPC fast path, grpc-unary.ts, answers
 * exactly what the Connect path answers after this mapping).
 */
export function clientDecodeError(error: ConnectError): ConnectError {
  if (error.code !== Code.Internal || !DECODE_FAILURE.test(error.rawMessage)) return error;
  return new ConnectError(message(error.rawMessage), Code.InvalidArgument, error.metadata);
}

/** grpc-status 13 with a decode failure's message becomes 3, in place. */
function fixGrpcStatus(headers: Headers | undefined): void {
  if (headers?.get("grpc-status") !== INTERNAL) return;
  const original = decodeURIComponent(headers.get("grpc-message") ?? "");
  if (!DECODE_FAILURE.test(original)) return;
  headers.set("grpc-status", INVALID_ARGUMENT);
  headers.set("grpc-message", encodeURIComponent(message(original)));
}

/** A Connect error object ({code, message}) for a decode failure, as INVALID_ARGUMENT; undefined for any other. */
function fixedConnectError(error: unknown): Record<string, unknown> | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const e = error as { code?: unknown; message?: unknown };
  if (e.code !== "internal" || typeof e.message !== "string" || !DECODE_FAILURE.test(e.message)) return undefined;
  return { ...e, code: "invalid_argument", message: message(e.message) };
}

/** One enveloped frame carrying a gRPC-Web trailer or a Connect end of stream, fixed; other chunks as they are. */
function fixFrame(chunk: Uint8Array): Uint8Array {
  if (chunk.length < 5) return chunk;
  const length = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength).getUint32(1);
  if (length !== chunk.length - 5) return chunk;
  const data = chunk.subarray(5);
  if (chunk[0] === trailerFlag) {
    const trailer = trailerParse(data);
    if (trailer.get("grpc-status") !== INTERNAL) return chunk;
    fixGrpcStatus(trailer);
    return encodeEnvelope(trailerFlag, trailerSerialize(trailer));
  }
  if (chunk[0] === endStreamFlag) {
    try {
      const end = JSON.parse(new TextDecoder().decode(data)) as { error?: unknown };
      const error = fixedConnectError(end.error);
      if (error) return encodeEnvelope(endStreamFlag, new TextEncoder().encode(JSON.stringify({ ...end, error })));
    } catch {
      // not JSON: not ours to change
    }
  }
  return chunk;
}

async function* once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

async function* mapped(
  body: AsyncIterable<Uint8Array>,
  each: (chunk: Uint8Array) => Uint8Array,
  atEnd: () => void,
): AsyncIterable<Uint8Array> {
  for await (const chunk of body) yield each(chunk);
  atEnd();
}

export async function clientDecodeErrors(res: UniversalServerResponse): Promise<UniversalServerResponse> {
  const contentType = res.header?.get("content-type") ?? "";
  if (contentType.startsWith("application/grpc-web") || contentType.startsWith("application/connect+")) {
    return res.body === undefined ? res : { ...res, body: mapped(res.body, fixFrame, () => {}) };
  }
  if (contentType.startsWith("application/grpc")) {
    // A trailers-only answer holds the status in its headers; otherwise the trailer is filled
    // in as the body ends, before it is written.
    fixGrpcStatus(res.header);
    return res.body === undefined
      ? res
      : {
          ...res,
          body: mapped(
            res.body,
            (c) => c,
            () => fixGrpcStatus(res.trailer),
          ),
        };
  }
  if (res.status === 500 && contentType.startsWith("application/json") && res.body !== undefined) {
    // Connect unary: the error is the whole (small) body.
    const chunks: Uint8Array[] = [];
    for await (const chunk of res.body) chunks.push(chunk);
    const bytes = Buffer.concat(chunks);
    let error: Record<string, unknown> | undefined;
    try {
      error = fixedConnectError(JSON.parse(bytes.toString("utf8")));
    } catch {
      error = undefined;
    }
    if (!error) return { ...res, body: once(bytes) };
    const fixed = new TextEncoder().encode(JSON.stringify(error));
    const header = new Headers(res.header);
    header.set("content-length", String(fixed.byteLength));
    return { ...res, status: 400, header, body: once(fixed) };
  }
  return res;
}
