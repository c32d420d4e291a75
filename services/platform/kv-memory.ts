/**
 * In-process KeyValueStore with Redis semantics (single process only). Expired entries are dropped
 * when touched and by a periodic sweep (an `unref()`ed timer), so the map never grows without
 * bound: every entry carries an expiry.
 */
import { validTtl, type KeyValueStore } from "./kv.js";

interface Entry {
  value: string;
  expiresAt: number;
}

export interface MemoryKeyValueStoreOptions {
  /** Sweep interval. Default 30 000. */
  sweepIntervalMs?: number;
  /** Clock, for tests. Default Date.now. */
  now?: () => number;
}

export class MemoryKeyValueStore implements KeyValueStore {
  readonly kind = "memory" as const;
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(options: MemoryKeyValueStoreOptions = {}) {
    this.now = options.now ?? Date.now;
    this.sweeper = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 30_000);
    this.sweeper.unref();
  }

  /** Number of entries held, expired or not (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  async get(key: string): Promise<string | null> {
    this.assertOpen();
    return this.live(key)?.value ?? null;
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.assertOpen();
    this.entries.set(key, { value, expiresAt: this.now() + validTtl(ttlMs) });
  }

  async del(key: string): Promise<void> {
    this.assertOpen();
    this.entries.delete(key);
  }

  async hit(key: string, ttlMs: number): Promise<{ count: number; resetMs: number }> {
    this.assertOpen();
    const ttl = validTtl(ttlMs, "ttlMs");
    const now = this.now();
    const entry = this.live(key);
    if (!entry) {
      this.entries.set(key, { value: "1", expiresAt: now + ttl });
      return { count: 1, resetMs: ttl };
    }
    const current = Number(entry.value);
    if (!Number.isSafeInteger(current)) throw new Error("ERR value is not an integer or out of range");
    entry.value = String(current + 1);
    return { count: current + 1, resetMs: Math.max(0, entry.expiresAt - now) };
  }

  async ping(): Promise<boolean> {
    return !this.closed;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    this.entries.clear();
  }

  /** Drops every expired entry. Runs periodically; callable directly. */
  sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt <= now) this.entries.delete(key);
    }
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("key-value store is closed");
  }
}
