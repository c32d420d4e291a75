// A file as the answer of an HttpBody stream method: its caching headers, a 304 when the client's
// copy is current, and the coding the client takes (gzip or deflate, platform/accept-encoding.ts)
// for text from the size from which Envoy's compressor compresses the JSON answers.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { HttpBodySchema } from "../../gen/google/api/httpbody_pb.js";
import { preferredCoding } from "../platform/accept-encoding.js";
import { HTTP_BODY_CHUNK_BYTES } from "../platform/body-chunks.js";
import { COMPRESSOR_MIN_CONTENT_LENGTH } from "../platform/compressor.js";
import { type ContentCoding, encodedStream } from "../platform/deflate-parts.js";
import { matchesIfNoneMatch } from "../platform/entity-tags.js";
import type { StaticFile } from "./files.js";

/** The file's bytes in each coding, made once per file and coding. */
const encoded = new WeakMap<StaticFile, Map<ContentCoding, Buffer>>();

function encodedBytes(file: StaticFile, coding: ContentCoding): Buffer {
  let byCoding = encoded.get(file);
  if (byCoding === undefined) encoded.set(file, (byCoding = new Map()));
  let bytes = byCoding.get(coding);
  if (bytes === undefined) byCoding.set(coding, (bytes = Buffer.concat(encodedStream([file.bytes], coding))));
  return bytes;
}

export interface FileAnswerOptions {
  /** Cache-Control: how long the browser may use the file without asking again. */
  readonly cacheControl: string;
  /** Extra response headers (a page's Content-Security-Policy). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** The HttpBody messages answering with `file`; none (and x-http-code 304) when the client's copy is current. */
export function* fileAnswer(
  ctx: HandlerContext,
  file: StaticFile,
  options: FileAnswerOptions,
): Generator<MessageInitShape<typeof HttpBodySchema>> {
  const compressible = file.compressible && file.bytes.length >= COMPRESSOR_MIN_CONTENT_LENGTH;
  const coding = compressible ? preferredCoding(ctx.requestHeader.get("accept-encoding") ?? undefined) : null;
  const headers = ctx.responseHeader;
  headers.set("cache-control", options.cacheControl);
  headers.set("x-content-type-options", "nosniff");
  for (const [name, value] of Object.entries(options.headers ?? {})) headers.set(name, value);
  // The representation varies by Accept-Encoding whenever it could be compressed; a compressed
  // one is another representation of the same bytes, so its validator is weak.
  if (compressible) headers.set("vary", "Accept-Encoding");
  headers.set("etag", coding === null ? file.etag : `W/${file.etag}`);
  if (matchesIfNoneMatch(ctx.requestHeader.get("if-none-match"), file.etag)) {
    headers.set("x-http-code", "304");
    return;
  }
  if (coding !== null) headers.set("content-encoding", coding);
  const body = coding === null ? file.bytes : encodedBytes(file, coding);
  for (let at = 0; at === 0 || at < body.length; at += HTTP_BODY_CHUNK_BYTES) {
    // Only the first message's content_type counts (google.api.HttpBody on a stream).
    yield { contentType: at === 0 ? file.contentType : "", data: body.subarray(at, at + HTTP_BODY_CHUNK_BYTES) };
  }
}
