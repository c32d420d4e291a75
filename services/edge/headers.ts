// Which HTTP headers cross the edge, in each direction.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";

// Request headers that describe the client's HTTP hop (hop-by-hop headers of RFC 9110 §7.6.1,
// framing and host) or would steer the RPC transport instead of reaching the service: the
// transport sets its own content-type, timeout and compression headers, and a client-chosen
// `grpc-encoding` or `connect-timeout-ms` must not be able to override them. Accept-Encoding
// does reach the service, as behind Envoy: the HttpBody routes compress their answers to it
// (analytics/read/http-body.ts); the gRPC transport's own is grpc-accept-encoding.
const DROP_REQUEST = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "http2-settings",
  "content-length",
  "content-type",
  "content-encoding",
  "expect",
  "x-request-id", // replaced by the validated id below
  "x-forwarded-for", // re-sent below with the client's address appended
]);

// Response headers/trailers of the RPC that belong to its transport, not to the REST response.
// `x-http-code` is consumed by the edge (it becomes the status), as the Lua filter removes it.
const DROP_RESPONSE = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "content-length",
  "content-type",
  "content-encoding",
  "accept-encoding",
  "date",
  "x-http-code",
  "x-request-id",
]);

function isTransportHeader(name: string): boolean {
  return name.startsWith("grpc-") || name.startsWith("connect-") || name.charCodeAt(0) === 58; /* ':' */
}

const LIST_SEPARATOR = /\s*,\s*/;

/**
 * The request metadata of the RPC: the client's end-to-end headers plus x-request-id, and
 * X-Forwarded-For with the client's address appended, as Envoy's `use_remote_address: true`
 * does (the services limit credential failures by that last hop). Returned as name/value pairs
 * because the transport builds its own Headers object from them anyway.
 */
export function forwardRequestHeaders(
  headers: IncomingHttpHeaders,
  requestId: string,
  clientAddress?: string,
): [string, string][] {
  const out: [string, string][] = [];
  // Headers named in Connection are hop-by-hop too (RFC 9110 §7.6.1).
  const connection = headers.connection;
  const named = connection === undefined ? undefined : new Set(connection.toLowerCase().split(LIST_SEPARATOR));
  for (const name in headers) {
    if (DROP_REQUEST.has(name) || isTransportHeader(name) || named?.has(name)) continue;
    const value = headers[name];
    if (value === undefined) continue;
    if (typeof value === "string") out.push([name, value]);
    else for (const v of value) out.push([name, v]);
  }
  out.push(["x-request-id", requestId]);
  const given = headers["x-forwarded-for"];
  // The client's own hops first, then the address this edge saw.
  const hops = Array.isArray(given) ? [...given] : given === undefined || given === "" ? [] : [given];
  if (clientAddress !== undefined) hops.push(clientAddress);
  if (hops.length > 0) out.push(["x-forwarded-for", hops.join(", ")]);
  return out;
}

/** Copies the service's headers or trailers onto the HTTP response headers being built. */
export function copyResponseMetadata(from: Headers, into: OutgoingHttpHeaders): void {
  from.forEach((value, name) => {
    if (DROP_RESPONSE.has(name) || isTransportHeader(name)) return;
    const prev = into[name];
    if (prev === undefined) into[name] = value;
    else if (Array.isArray(prev)) prev.push(value);
    else into[name] = [String(prev), value];
  });
}
