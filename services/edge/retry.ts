// Retrying calls that never reached a service, as Envoy's retry policies in envoy.yaml do
// (retry_on: connect-failure, refused-stream, on reads and writes alike): a stream the upstream
// refused (HTTP/2 REFUSED_STREAM, or a GOAWAY that came before the stream was processed) or a
// connection it refused was not handled at all, so sending it again cannot do anything twice.
// That is what lets a backend drain on SIGTERM (it answers new streams with GOAWAY) without
// failing the requests that raced its shutdown. Anything else is returned as it is.
import { Code, ConnectError } from "@connectrpc/connect";

export const MAX_RETRIES = 2;
const BACKOFF_MS = [25, 100];

interface NodeErrorLike {
  code?: unknown;
  message?: unknown;
  cause?: unknown;
}

/** True when the error proves the request was never processed upstream. */
export function neverReachedUpstream(err: unknown): boolean {
  for (
    let e = err as NodeErrorLike | undefined, depth = 0;
    e && depth < 8;
    e = e.cause as NodeErrorLike | undefined, depth++
  ) {
    const code = typeof e.code === "string" ? e.code : "";
    const message = typeof e.message === "string" ? e.message : "";
    if (code === "ECONNREFUSED" || code === "ERR_HTTP2_GOAWAY_SESSION") return true;
    if (/REFUSED_STREAM/.test(message)) return true;
  }
  return false;
}

/** Runs the call, again (at most MAX_RETRIES times) when it never reached the service. */
export async function withUpstreamRetries<T>(call: () => Promise<T>, signal: AbortSignal): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (!neverReachedUpstream(err) || signal.aborted) throw err;
      if (attempt >= MAX_RETRIES) {
        // What Envoy answers when its retries run out: 503, not an internal error.
        throw new ConnectError("the service refused the request while restarting; retry shortly", Code.Unavailable);
      }
      await new Promise((r) => setTimeout(r, BACKOFF_MS[attempt] ?? 100));
    }
  }
}
