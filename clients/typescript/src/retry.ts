// Retries of calls that failed UNAVAILABLE, with exponential backoff and full jitter, as one
// interceptor. Which calls, and why:
//
// - A read (a method whose REST binding is GET, or whose proto says it has no side effects or is
//   idempotent) is retried on any UNAVAILABLE: doing it twice changes nothing. Our services answer
//   UNAVAILABLE when a dependency is briefly gone (the database restarting or busy, the cursor or
//   rate-limit store unreachable), and so does a connection that could not be made or that broke
//   under the call (connectionLossInterceptor below makes the latter UNAVAILABLE too).
// - A write (CreateSession, PostMessage, DeleteSession, ...) is retried only when the request
//   provably never reached a service: the connection was refused, or the server refused the
//   stream (HTTP/2 REFUSED_STREAM, or a GOAWAY that came before the stream was taken, as a
//   draining server sends). UNAVAILABLE alone does not prove that: a connection that broke after
//   the request was sent, or a database that restarted while a COMMIT was on its way, may have
//   applied it, and a second attempt would create a second session or message. This is the rule
//   Envoy's routes follow (envoy.yaml: reads on `unavailable,reset,connect-failure,
//   refused-stream`, writes on `connect-failure,refused-stream`).
// - Unary calls only: a server stream that fails midway has already delivered messages, and
//   starting it again would deliver them twice.
//
// Attempts are bounded (maxAttempts, the first included) and so is time: the call's deadline
// (timeoutMs) covers every attempt and the waits between them, so a retry never outlives it.
import { type DescMethod, getOption } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { http } from "../gen/google/api/annotations_pb.js";

export interface RetryOptions {
  /** Attempts in all, the first included (default 4); 1 turns retries off. */
  readonly maxAttempts?: number;
  /** The first wait's upper bound, in ms (default 100); each further wait's bound doubles. */
  readonly baseDelayMs?: number;
  /** The largest bound of a wait, in ms (default 2000). */
  readonly maxDelayMs?: number;
}

export const DEFAULT_RETRY: Required<RetryOptions> = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 2000 };

/** True for a method that may run twice without effect: a GET binding, or an idempotency level saying so. */
export function isSafeToRepeat(method: DescMethod): boolean {
  const level = method.idempotency;
  if (level === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS || level === MethodOptions_IdempotencyLevel.IDEMPOTENT)
    return true;
  return getOption(method, http).pattern.case === "get";
}

interface ErrorLike {
  code?: unknown;
  message?: unknown;
  cause?: unknown;
}

/**
 * True when the error proves the request never reached a service: a refused connection, a
 * refused stream, a GOAWAY before the stream was taken. The same rule as the REST edge's retries
 * (services/edge/retry.ts), written here again because this package stands alone.
 */
export function neverReachedServer(err: unknown): boolean {
  for (let e = err as ErrorLike | undefined, depth = 0; e && depth < 8; e = e.cause as ErrorLike | undefined, depth++) {
    const code = typeof e.code === "string" ? e.code : "";
    const message = typeof e.message === "string" ? e.message : "";
    if (code === "ECONNREFUSED" || code === "ERR_HTTP2_GOAWAY_SESSION") return true;
    if (/REFUSED_STREAM/.test(message)) return true;
  }
  return false;
}

/** Whether a failed attempt of a method that is (or is not) safe to repeat may be tried again. */
export function isRetryable(err: unknown, safeToRepeat: boolean): boolean {
  if (neverReachedServer(err)) return true;
  return safeToRepeat && err instanceof ConnectError && err.code === Code.Unavailable;
}

/**
 * A call whose connection was lost is UNAVAILABLE, as gRPC's own clients report it. Left alone,
 * connect-node reports a connection that closed under the call as CANCELED (its streams are
 * reset with CANCEL) although the caller cancelled nothing, and connect-web lets fetch's
 * TypeError (no answer at all) through as it is. A CANCELED the caller did cause (its signal
 * aborted) stays CANCELED.
 */
export function connectionLossInterceptor(): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      const lost =
        !req.signal.aborted &&
        (err instanceof TypeError || (err instanceof ConnectError && err.code === Code.Canceled));
      if (!lost) throw err;
      const message = err instanceof Error ? err.message : String(err);
      throw new ConnectError(`connection lost: ${message}`, Code.Unavailable, undefined, undefined, err);
    }
  };
}

/** The wait before retry number `retry` (1 for the first): uniform in [0, min(max, base * 2^(retry-1))). */
export function backoffMs(retry: number, options: Required<RetryOptions>, random: () => number = Math.random): number {
  const bound = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (retry - 1));
  return Math.floor(random() * bound);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The retry interceptor; interceptors listed after it run once per attempt. */
export function retryInterceptor(options: RetryOptions = {}): Interceptor {
  const settings = { ...DEFAULT_RETRY, ...options };
  if (!Number.isInteger(settings.maxAttempts) || settings.maxAttempts < 1)
    throw new Error(`retry.maxAttempts must be a whole number of at least 1, got ${settings.maxAttempts}`);
  return (next) => async (req) => {
    if (req.stream || settings.maxAttempts === 1) return next(req);
    const safe = isSafeToRepeat(req.method);
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(req);
      } catch (err) {
        if (attempt >= settings.maxAttempts || req.signal.aborted || !isRetryable(err, safe)) throw err;
        // The deadline (or the caller's abort) during the wait ends the call with its reason.
        await sleep(backoffMs(attempt, settings), req.signal).catch((reason: unknown) => {
          throw ConnectError.from(reason);
        });
      }
    }
  };
}
