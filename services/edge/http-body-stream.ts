// Routes whose method returns a stream of google.api.HttpBody (routes.ts): the body is the
// messages' data, written as each message arrives, with the first message's content_type as the
// Content-Type, as Envoy's transcoder does. Nothing is buffered beyond the socket's own buffer:
// a write the client is not taking fast enough waits for it to drain, which in turn stops
// reading the stream (HTTP/2 flow control holds the service back).
import { once } from "node:events";
import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { Transport } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { HttpBodySchema } from "../../gen/google/api/httpbody_pb.js";
import { copyResponseMetadata } from "./headers.js";
import { oneMessage } from "./local-transport.js";
import { isBodiless, successStatus } from "./respond.js";
import type { Route } from "./routes.js";

type HttpBody = MessageShape<typeof HttpBodySchema>;

/** A stream opened up to its first message: what decides the status and headers. */
export interface OpenedHttpBodyStream {
  readonly header: Headers;
  readonly trailer: Headers;
  readonly first: IteratorResult<HttpBody>;
  readonly rest: AsyncIterator<HttpBody>;
}

/**
 * Calls the method and reads its first message. An error before it (the service's validation,
 * authentication, a refused stream) rejects here, while no byte of the answer is written: it is
 * answered as any error, and retried like a unary call when it never reached the service.
 */
export async function openHttpBodyStream(
  transport: Transport,
  route: Route,
  signal: AbortSignal,
  timeoutMs: number | undefined,
  header: [string, string][],
  input: MessageInitShape<typeof HttpBodySchema> | object,
): Promise<OpenedHttpBodyStream> {
  if (route.call.kind !== "http_body_stream") throw new Error(`${route.method.name} is not an HttpBody stream`);
  const response = await transport.stream(route.call.method, signal, timeoutMs, header, oneMessage(input as never));
  const rest = (response.message as AsyncIterable<HttpBody>)[Symbol.asyncIterator]();
  const first = await rest.next();
  return { header: response.header, trailer: response.trailer, first, rest };
}

/**
 * Writes the answer. Once the headers are out an error can no longer become an error response:
 * the caller destroys the connection (Envoy resets the stream), so the client sees a truncated
 * body, never a complete-looking one.
 */
export async function writeHttpBodyStream(
  res: ServerResponse,
  route: Route,
  stream: OpenedHttpBodyStream,
  requestId: string,
  logger: Logger,
  signal: AbortSignal,
): Promise<void> {
  const headers: OutgoingHttpHeaders = {};
  copyResponseMetadata(stream.header, headers);
  // A stream that ended at once (a 304) had its headers and trailers together.
  if (stream.first.done) copyResponseMetadata(stream.trailer, headers);
  // The body is the service's bytes as they are: their coding is the service's to name.
  const coding = stream.header.get("content-encoding");
  if (coding !== null) headers["content-encoding"] = coding;
  const status = successStatus(stream.header, stream.trailer, requestId, route.method.name, logger);
  headers["x-request-id"] = requestId;
  if (stream.first.done || isBodiless(status)) {
    res.writeHead(status, headers);
    res.end();
    return;
  }
  if (stream.first.value.contentType !== "") headers["content-type"] = stream.first.value.contentType;
  res.writeHead(status, headers);
  let next: IteratorResult<HttpBody> = stream.first;
  try {
    while (!next.done) {
      const data = next.value.data;
      if (data.length > 0 && !res.write(data)) await once(res, "drain", { signal });
      next = await stream.rest.next();
    }
  } finally {
    // Stopped early (the client left while a write waited to drain): the service's stream is
    // suspended where it last yielded, where no signal reaches it, so it is ended here; left
    // alone it would hold what it holds (a session event stream its wake-up subscription, and
    // so the server's LISTEN connection) for as long as the process lives.
    if (!next.done) void stream.rest.return?.().catch(() => {});
  }
  res.end();
}
