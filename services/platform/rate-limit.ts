// Per-credential fixed-window rate limiting, counted in Redis (docs/architecture.md,
// "Authentication and authorization"). Every public response carries RateLimit-Limit / -Remaining /
// -Reset; a refusal is RESOURCE_EXHAUSTED (429) with Retry-After. When the counter store is
// unreachable the request fails fast with UNAVAILABLE rather than passing unlimited. Errors are
// mapped, with these headers, by the outer interceptor alone (request-context.ts).
import { createContextKey, type Interceptor } from "@connectrpc/connect";
import { DomainError, unavailable } from "./errors.js";
import { kPrincipal } from "./context.js";
import type { KeyValueStore } from "./kv.js";

export const RATE_LIMIT_WINDOW_MS = 60_000;

/** This call's RateLimit-* headers, for the outer interceptor to put on an error answer too. */
export const kRateLimitHeaders = createContextKey<Readonly<Record<string, string>> | undefined>(undefined, {
  description: "rate limit headers",
});

/** Requests per minute by organization plan; an organization may carry its own override. */
export const PLAN_RATE_LIMITS: Readonly<Record<string, number>> = {
  free: 60,
  team: 600,
  enterprise: 6000,
};

/**
 * Windows are aligned on the clock (minute 0-60 s, 60-120 s, ...) and named in the counter's key,
 * so every replica counts a credential's requests of one window under one key. The budget comes
 * back when the window ends: RateLimit-Reset and Retry-After give the seconds left until then
 * (at least 1), and the counter expires then too. `now` is for tests.
 */
export function rateLimitInterceptor(
  kv: KeyValueStore,
  windowMs = RATE_LIMIT_WINDOW_MS,
  now: () => number = Date.now,
): Interceptor {
  return (next) => async (req) => {
    const principal = req.contextValues.get(kPrincipal);
    if (!principal) return next(req);
    const at = now();
    const window = Math.floor(at / windowMs);
    const leftMs = (window + 1) * windowMs - at;
    let hit: { count: number };
    try {
      hit = await kv.hit(`rl:${principal.credentialId}:${window}`, leftMs);
    } catch {
      throw unavailable("rate limiter unavailable, retry shortly");
    }
    const limit = principal.rateLimitPerMinute;
    const resetSeconds = Math.max(1, Math.ceil(leftMs / 1000));
    const headers: Record<string, string> = {
      "ratelimit-limit": String(limit),
      "ratelimit-remaining": String(Math.max(0, limit - hit.count)),
      "ratelimit-reset": String(resetSeconds),
    };
    req.contextValues.set(kRateLimitHeaders, headers);
    if (hit.count > limit) {
      throw new DomainError(
        "resource_exhausted",
        `rate limit of ${limit} requests per minute exceeded; retry after ${resetSeconds} s`,
        {
          ...headers,
          "retry-after": String(resetSeconds),
        },
      );
    }
    const res = await next(req);
    for (const [k, v] of Object.entries(headers)) res.header.set(k, v);
    return res;
  };
}
