// The outermost server interceptor: gives every call a request id and a child logger, logs one
// line per call (never its headers: they carry credentials), and maps whatever a handler threw
// to a ConnectError through the one mapping in errors.ts: the only place a call's error is
// mapped, the rate limiter's refusals and its headers on every error included.
import type { ConnectError, Interceptor } from "@connectrpc/connect";
import { requestIdFrom } from "./request-id.js";
import type { Logger } from "./logger.js";
import { kLogger, kPrincipal, kRequestId } from "./context.js";
import { toConnectError } from "./errors.js";
import { kRateLimitHeaders } from "./rate-limit.js";

export function requestContextInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const requestId = requestIdFrom(req.header.get("x-request-id"));
    const log = logger.child({ requestId, rpc: `${req.service.typeName}/${req.method.name}` });
    req.contextValues.set(kRequestId, requestId);
    req.contextValues.set(kLogger, log);
    const succeeded = () =>
      log.info(
        { code: "ok", ms: Math.round(performance.now() - started), org: req.contextValues.get(kPrincipal)?.orgId },
        "rpc",
      );
    const failed = (err: unknown): ConnectError => {
      const { error, internal } = toConnectError(err);
      // Errors carry the rate-limit headers too, so a client sees its budget on every answer;
      // bugs do not (their answer says nothing but "internal error").
      if (!internal) {
        for (const [k, v] of Object.entries(req.contextValues.get(kRateLimitHeaders) ?? {})) {
          if (!error.metadata.has(k)) error.metadata.set(k, v);
        }
      }
      error.metadata.set("x-request-id", requestId);
      const fields = {
        code: error.code,
        ms: Math.round(performance.now() - started),
        org: req.contextValues.get(kPrincipal)?.orgId,
      };
      if (internal) log.error({ ...fields, err }, "rpc failed");
      else log.info({ ...fields, reason: error.rawMessage }, "rpc");
      return error;
    };
    let res: Awaited<ReturnType<typeof next>>;
    try {
      res = await next(req);
    } catch (err) {
      throw failed(err);
    }
    res.header.set("x-request-id", requestId);
    if (!res.stream) {
      succeeded();
      return res;
    }
    // A server stream's handler runs while its messages are read: what it throws, before its
    // first message or after, surfaces there, and the call ends when the last one is read.
    const messages = res.message;
    async function* mapped() {
      try {
        yield* messages;
      } catch (err) {
        throw failed(err);
      }
      succeeded();
    }
    return { ...res, message: mapped() };
  };
}
