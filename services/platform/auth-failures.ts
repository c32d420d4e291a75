// Rate limit of credential failures, per client address and kind of credential ("apk_", "aps_",
// "jwt"). Counted in Redis, so every replica sees a flood spread over replicas; once an
// address is over its limit, each replica remembers that in memory until the window ends, so
// further unknown credentials from it cost neither a query nor a Redis round trip. Credentials
// already known valid are never refused by it: the authenticator consults its cache first.
import { DomainError } from "./errors.js";
import type { KeyValueStore } from "./kv.js";

export interface AuthFailureLimits {
  /** Failures allowed per address and kind in one window. */
  readonly perWindow: number;
  readonly windowMs: number;
}

export const DEFAULT_AUTH_FAILURE_LIMITS: AuthFailureLimits = { perWindow: 30, windowMs: 60_000 };

/** What a bearer token claims to be, by its prefix: the second half of the limiter's key. */
export function credentialKindOf(token: string): string {
  return token.startsWith("apk_") ? "apk" : token.startsWith("aps_") ? "aps" : "jwt";
}

export class AuthFailureLimiter {
  /** `address kind` → end of the window in which it went over the limit (ms). */
  private readonly blocked = new Map<string, number>();

  constructor(
    private readonly kv: KeyValueStore,
    private readonly limits: AuthFailureLimits = DEFAULT_AUTH_FAILURE_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Throws RESOURCE_EXHAUSTED (429 with Retry-After) while this address and kind are over the limit. No I/O. */
  check(address: string, kind: string): void {
    const key = `${address} ${kind}`;
    const until = this.blocked.get(key);
    if (until === undefined) return;
    const now = this.now();
    if (until <= now) {
      this.blocked.delete(key);
      return;
    }
    const seconds = String(Math.max(1, Math.ceil((until - now) / 1000)));
    throw new DomainError(
      "resource_exhausted",
      `too many invalid credentials from this client; retry after ${seconds} s`,
      { "retry-after": seconds },
    );
  }

  /** Counts a failure; past the limit, blocks the address and kind until the window ends. Never throws. */
  async fail(address: string, kind: string): Promise<void> {
    const now = this.now();
    const window = Math.floor(now / this.limits.windowMs);
    const windowEnd = (window + 1) * this.limits.windowMs;
    let count: number;
    try {
      ({ count } = await this.kv.hit(`authfail:${kind}:${address}:${window}`, this.limits.windowMs));
    } catch {
      return; // Redis down: the request itself fails at the rate limiter; do not add to it.
    }
    if (count > this.limits.perWindow) {
      // Bounded: at most one entry per address and kind that flooded in the current window.
      if (this.blocked.size >= 100_000) this.sweep(now);
      this.blocked.set(`${address} ${kind}`, windowEnd);
    }
  }

  private sweep(now: number): void {
    for (const [key, until] of this.blocked) if (until <= now) this.blocked.delete(key);
    if (this.blocked.size >= 100_000) this.blocked.clear();
  }
}
