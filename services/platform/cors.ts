// CORS on the public gRPC port, for browsers calling it with Connect or gRPC-Web
// (@agentplane/client's browser build, connect-web). Only the origins CORS_ALLOWED_ORIGINS names
// are let in (none by default); Envoy's gRPC-Web listener applies the same lists (envoy.yaml,
// checked by test/deploy/envoy.test.ts).
//
// A preflight (OPTIONS with Access-Control-Request-Method) is answered here, before the
// credential check: 204 with the allowed methods and headers for an allowed origin, 403 without
// any Access-Control-Allow-Origin for another. An actual call from an allowed origin gets
// Access-Control-Allow-Origin and the headers a script may read on every answer it receives,
// refusals before the body (early-auth.ts) and deadline answers included: those write to the
// HTTP/2 stream directly, so the headers are added where every answer passes, the stream's
// respond(). Calls from other origins, or without Origin (servers, CLIs), are served unchanged:
// CORS is the browser's check, and every call needs a credential anyway.
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { cors } from "@connectrpc/connect";

/** What a browser may send: Connect's and gRPC-Web's own headers, the credential and a request id. */
export const CORS_ALLOWED_HEADERS: readonly string[] = [...cors.allowedHeaders, "Authorization", "X-Request-Id"];

/** What a script may read: gRPC-Web's status, the request id and the rate-limit headers (rate-limit.ts). */
export const CORS_EXPOSED_HEADERS: readonly string[] = [
  ...cors.exposedHeaders,
  "X-Request-Id",
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "RateLimit-Reset",
  "Retry-After",
];

export const CORS_ALLOWED_METHODS: readonly string[] = cors.allowedMethods;

/** How long a browser may reuse a preflight's answer (Chromium caps it at 2 hours). */
export const CORS_MAX_AGE_SECONDS = 7200;

/** Returns true when it answered the request (a preflight); otherwise the call goes on. */
export type StreamCors = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => boolean;

/** The CORS handling for these origins; undefined for none (no browser may call). */
export function createCors(allowedOrigins: readonly string[]): StreamCors | undefined {
  if (allowedOrigins.length === 0) return undefined;
  const allowed = new Set(allowedOrigins);
  const preflightHeaders = {
    "access-control-allow-methods": CORS_ALLOWED_METHODS.join(", "),
    "access-control-allow-headers": CORS_ALLOWED_HEADERS.join(", "),
    "access-control-max-age": String(CORS_MAX_AGE_SECONDS),
  };
  const exposed = CORS_EXPOSED_HEADERS.join(", ");
  return (stream, headers) => {
    const origin = headers.origin;
    const preflight = headers[":method"] === "OPTIONS" && headers["access-control-request-method"] !== undefined;
    const ok = typeof origin === "string" && allowed.has(origin);
    if (preflight) {
      const vary = "Origin, Access-Control-Request-Method, Access-Control-Request-Headers";
      stream.respond(
        ok
          ? { ":status": 204, "access-control-allow-origin": origin, ...preflightHeaders, vary }
          : { ":status": 403, vary },
        { endStream: true },
      );
      return true;
    }
    if (ok)
      addToEveryAnswer(stream, { "access-control-allow-origin": origin, "access-control-expose-headers": exposed });
    return false;
  };
}

/** Wraps the stream's respond() so that whoever answers, these headers and `Vary: Origin` go out. */
function addToEveryAnswer(stream: ServerHttp2Stream, extra: OutgoingHttpHeaders): void {
  const respond = stream.respond.bind(stream);
  stream.respond = (headers?: OutgoingHttpHeaders, options?: Parameters<ServerHttp2Stream["respond"]>[1]) => {
    const vary = headers?.vary;
    respond({ ...headers, ...extra, vary: vary === undefined ? "Origin" : `${String(vary)}, Origin` }, options);
  };
}
