// Requests Node's HTTP parser rejects before any handler runs (an unknown method, headers or a
// request line over the size limit, malformed framing, a client too slow to send its headers).
// Node's default answer is a bare status line; Envoy answers these with its local_reply_config
// mappers in envoy.yaml, so they get the same {title, detail, status, requestId} body as every
// other error here.
import type { Duplex } from "node:stream";
import { randomUUID } from "node:crypto";
import { errorBody } from "./errors.js";
import { reasonPhrase } from "./status.js";

interface ParserError extends Error {
  code?: string;
  /** What the parser had read when it gave up (Node sets it on parse errors). */
  rawPacket?: Buffer;
}

function statusOf(err: ParserError): number {
  switch (err.code) {
    case "HPE_HEADER_OVERFLOW":
      return 431;
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return 408;
    default:
      return 400;
  }
}

/** For `server.on("clientError", ...)` of the REST edge's HTTP server. */
export function handleClientError(err: ParserError, socket: Duplex): void {
  // A reset or a half-closed socket has nobody to answer.
  if (err.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = statusOf(err);
  const requestId = randomUUID();
  const detail =
    status === 431
      ? "Request line or headers too large"
      : status === 408
        ? "Request headers not received in time"
        : `Malformed HTTP request (${reasonPhrase(status)})`;
  const body = errorBody(status, detail, requestId);
  // The answer to a HEAD request never has a body (RFC 9110 §9.3.2), only its length.
  const head = err.rawPacket?.subarray(0, 5).toString("latin1") === "HEAD ";
  socket.end(
    `HTTP/1.1 ${status} ${reasonPhrase(status)}\r\n` +
      "content-type: application/json\r\n" +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      `x-request-id: ${requestId}\r\n` +
      "connection: close\r\n\r\n" +
      (head ? "" : body),
  );
}
