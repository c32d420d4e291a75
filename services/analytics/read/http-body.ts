// The REST form of /tokens and /users (StreamTokens, StreamUsers): the JSON body the edge sends,
// as a stream of google.api.HttpBody chunks. Envoy's transcoder and the TypeScript edge pass the
// chunks on as they arrive, so neither edge holds a large answer whole, and both send the same
// bytes: the body is made here, compressed here when the client takes it, and Content-Encoding
// travels in the response headers (Envoy's compressor leaves a response that has one alone).
//
// Most of the body is JSON the rollup already rendered, and for /tokens already compressed
// (platform/deflate-parts.ts); the envelope around it is printed from the response message as
// Envoy prints messages (JSON names, every implicit field).
import { create, toJson, type DescMessage, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { HttpBody, HttpBodySchema } from "../../../gen/google/api/httpbody_pb.js";
import { preferredCoding } from "../../platform/accept-encoding.js";
import { ENVOY_JSON_OPTIONS } from "../../platform/printed-json.js";
import {
  bodyLength,
  encodedStream,
  isDeflated,
  plainPart,
  type BodyPart,
  type ContentCoding,
} from "../../platform/deflate-parts.js";
import { HTTP_BODY_CHUNK_BYTES } from "../../platform/body-chunks.js";
import { COMPRESSOR_MIN_CONTENT_LENGTH } from "../../platform/compressor.js";

/** The content coding the request takes for these bodies (its Accept-Encoding), or null. */
export function requestedCoding(ctx: HandlerContext): ContentCoding | null {
  return preferredCoding(ctx.requestHeader.get("accept-encoding") ?? undefined);
}

/**
 * The parts of `{"data":<rows>,...}`: the message printed as Envoy prints it, with `rows` (JSON
 * array text parts) in place of its first field, which must be the repeated field `data`.
 */
export function envelopeParts<Desc extends DescMessage>(
  schema: Desc,
  rest: MessageInitShape<Desc>,
  rows: readonly BodyPart[],
): BodyPart[] {
  const json = toJson(schema, create(schema, rest), ENVOY_JSON_OPTIONS) as JsonObject;
  const first = schema.fields[0];
  if (first?.jsonName !== "data" || !Array.isArray(json.data) || json.data.length !== 0) {
    // A bug here, not a client error: the answer would silently lose or duplicate rows.
    throw new Error(`${schema.typeName}: the rows must replace an empty first field "data"`);
  }
  delete json.data;
  const tail = JSON.stringify(json);
  return ['{"data":', ...rows, tail === "{}" ? "}" : `,${tail.slice(1)}`];
}

/**
 * Whether the body goes compressed: the client takes a coding, and the body holds parts
 * compressed ahead of time (sending them costs less than inflating them) or is long enough to
 * be worth compressing.
 */
export function compressionOf(parts: readonly BodyPart[], coding: ContentCoding | null): ContentCoding | null {
  if (coding === null) return null;
  return parts.some(isDeflated) || bodyLength(parts) >= COMPRESSOR_MIN_CONTENT_LENGTH ? coding : null;
}

/**
 * The representation headers every answer of these routes carries (a 304 too, RFC 9110 §15.4.5).
 * The ETag is weak whenever the client takes a coding: the body may go compressed, another
 * representation of the same data, whose bytes a strong validator would promise.
 */
export function representationEtag(etag: string, coding: ContentCoding | null): string {
  return coding === null ? etag : `W/${etag}`;
}

/** The body as HttpBody messages of about HTTP_BODY_CHUNK_BYTES, in `coding` or as UTF-8 text. */
export function* httpBodyChunks(
  parts: readonly BodyPart[],
  coding: ContentCoding | null,
): Generator<MessageInitShape<typeof HttpBodySchema>> {
  // Compressed: the stored blocks are spliced in (no copy); text parts are compressed at once.
  // Text: each part is inflated only when its turn comes.
  const pieces: Iterable<string | Buffer> = coding === null ? plainParts(parts) : encodedStream(parts, coding);
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const take = (): HttpBody["data"] => {
    const data = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    return data;
  };
  let first = true;
  const message = (data: Uint8Array) => {
    // Only the first message's content_type counts (google.api.HttpBody on a stream).
    const m = { contentType: first ? "application/json" : "", data };
    first = false;
    return m;
  };
  for (const piece of pieces) {
    let bytes = typeof piece === "string" ? Buffer.from(piece, "utf8") : piece;
    while (bytes.length > 0) {
      const room = HTTP_BODY_CHUNK_BYTES - pendingBytes;
      const slice = bytes.length <= room ? bytes : bytes.subarray(0, room);
      pending.push(slice);
      pendingBytes += slice.length;
      bytes = bytes.subarray(slice.length);
      if (pendingBytes >= HTTP_BODY_CHUNK_BYTES) yield message(take());
    }
  }
  if (pendingBytes > 0 || first) yield message(take());
}

function* plainParts(parts: readonly BodyPart[]): Generator<string | Buffer> {
  for (const part of parts) yield plainPart(part);
}
