/**
 * Key-value state held in Redis: rate-limit counters and opaque cursor tokens. Without
 * `REDIS_URL`, an in-process store with the same semantics stands in (single process only).
 *
 * Every operation rejects promptly (it never queues while Redis is down), so a caller can answer
 * 503/UNAVAILABLE instead of hanging; `ping` feeds the health check and never throws.
 */
import type { Logger } from "pino";

export interface KeyValueStore {
  readonly kind: "redis" | "memory";
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  del(key: string): Promise<void>;
  /**
   * Fixed-window counter: atomically increments key, setting its expiry to ttlMs when it is
   * created (the caller passes what is left of its window, so the counter dies with the window).
   * Later hits never move the expiry. Returns the new count and the counter's remaining ms.
   */
  hit(key: string, ttlMs: number): Promise<{ count: number; resetMs: number }>;
  ping(timeoutMs?: number): Promise<boolean>; // never throws
  close(): Promise<void>;
}

export interface OpenKeyValueStoreOptions {
  /** `redis://` or `rediss://` URL; absent → the in-process store. */
  redisUrl?: string | undefined;
  logger: Logger;
  /** Prepended to every key (e.g. to keep tests or environments apart). */
  keyPrefix?: string;
}

export async function openKeyValueStore(options: OpenKeyValueStoreOptions): Promise<KeyValueStore> {
  if (options.redisUrl) {
    const { openRedisStore } = await import("./kv-redis.js");
    return openRedisStore({ url: options.redisUrl, logger: options.logger, keyPrefix: options.keyPrefix });
  }
  const { MemoryKeyValueStore } = await import("./kv-memory.js");
  options.logger.warn(
    "REDIS_URL is not set: rate limits and cursors are kept in this process's memory, which only works for a single process",
  );
  return new MemoryKeyValueStore();
}

/** Milliseconds as a positive integer for PX/PEXPIRE; rejects nonsense early. */
export function validTtl(ms: number, what = "ttlMs"): number {
  if (!Number.isFinite(ms) || ms <= 0)
    throw new RangeError(`${what} must be a positive number of milliseconds, got ${ms}`);
  return Math.max(1, Math.ceil(ms));
}
