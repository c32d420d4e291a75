/**
 * KeyValueStore on Redis (ioredis): one server, a master found through Sentinel, or Redis Cluster
 * (REDIS_URL's forms: redis-url.ts). Fails fast: no offline queue, a short connect and command
 * timeout, and at most one retry of a command caught by a dropped connection, so callers get an
 * error within about a second while Redis is down. The client reconnects by itself (capped
 * backoff, forever) and operations succeed again once Redis is back.
 */
import { Cluster, Redis, type RedisOptions } from "ioredis";
import type { Logger } from "pino";
import { validTtl, type KeyValueStore } from "./kv.js";
import { parseRedisUrl } from "./redis-url.js";

export interface RedisStoreOptions {
  url: string;
  logger: Logger;
  /** Prepended to every key. */
  keyPrefix?: string | undefined;
  /** Per-command timeout. Default 1 000. */
  commandTimeoutMs?: number;
  /** Connect timeout, also how long `openRedisStore` waits for the first connection. Default 2 000. */
  connectTimeoutMs?: number;
}

/**
 * INCR, and on a key without expiry (i.e. just created) set it to the given TTL. One round trip.
 *
 * Cluster: a script may touch only keys it declares in KEYS, all in one hash slot. This one
 * touches its one key. Every other operation here is a single-key command and nothing uses MULTI,
 * so no key needs a hash tag; clear() (tests only) deletes key by key for the same reason.
 */
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
`;

interface HitCommand {
  agentplaneHit(key: string, ttlMs: number): Promise<[number | string, number | string]>;
}

/** Opens the store, waiting up to the connect timeout for Redis; if it is not there yet, returns anyway (operations fail until it is). */
export async function openRedisStore(options: RedisStoreOptions): Promise<RedisKeyValueStore> {
  const store = new RedisKeyValueStore(options);
  await store.waitReady(options.connectTimeoutMs ?? 2_000);
  return store;
}

export class RedisKeyValueStore implements KeyValueStore {
  readonly kind = "redis" as const;
  readonly keyPrefix: string;
  private readonly redis: Redis | Cluster;
  private readonly log: Logger;
  private healthy: boolean | null = null;
  private closing: Promise<void> | null = null;

  constructor(options: RedisStoreOptions) {
    this.keyPrefix = options.keyPrefix ?? "";
    this.log = options.logger.child({ component: "kv" });
    const connectTimeout = options.connectTimeoutMs ?? 2_000;
    const common = {
      connectionName: "agentplane",
      connectTimeout,
      commandTimeout: options.commandTimeoutMs ?? 1_000,
      maxRetriesPerRequest: 1,
    } satisfies RedisOptions;
    const retry = (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2_000) + Math.floor(Math.random() * 100);
    const target = parseRedisUrl(options.url);
    if (target.kind === "standalone") {
      this.redis = new Redis(options.url, {
        ...common,
        keyPrefix: this.keyPrefix,
        enableOfflineQueue: false,
        retryStrategy: retry,
      });
    } else if (target.kind === "sentinel") {
      this.redis = new Redis({
        ...common,
        keyPrefix: this.keyPrefix,
        enableOfflineQueue: false,
        sentinels: target.sentinels.map((s) => ({ host: s.host, port: s.port })),
        name: target.name,
        username: target.username,
        password: target.password,
        sentinelUsername: target.sentinelUsername,
        sentinelPassword: target.sentinelPassword,
        ...(target.tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
        // After a failover: the Sentinels' +switch-master moves the connection to the new master,
        // and a write refused by a demoted master (READONLY) reconnects, asking the Sentinels again.
        failoverDetector: true,
        reconnectOnError: (error) => (error.message.startsWith("READONLY") ? 2 : false),
        sentinelRetryStrategy: retry,
        retryStrategy: retry,
      });
    } else {
      this.redis = new Cluster(
        target.nodes.map((n) => ({ host: n.host, port: n.port })),
        {
          keyPrefix: this.keyPrefix,
          enableOfflineQueue: false,
          clusterRetryStrategy: retry,
          redisOptions: {
            ...common,
            username: target.username,
            password: target.password,
            ...(target.tls ? { tls: {} } : {}),
          },
        },
      );
    }
    this.redis.defineCommand("agentplaneHit", { numberOfKeys: 1, lua: HIT_SCRIPT });
    this.redis.on("ready", () => {
      if (this.healthy === false) this.log.info("Redis connection restored");
      this.healthy = true;
    });
    this.redis.on("error", (error: Error) => {
      // Logged once per outage; ioredis keeps reconnecting on its own.
      if (this.healthy !== false) this.log.warn({ err: error }, "Redis unavailable");
      else this.log.debug({ err: error }, "Redis still unavailable");
      this.healthy = false;
    });
  }

  /** Resolves when connected or after timeoutMs, whichever comes first. */
  async waitReady(timeoutMs: number): Promise<boolean> {
    if (this.redis.status === "ready") return true;
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.redis.off("ready", onReady);
        resolve(ok);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.redis.on("ready", onReady);
    });
  }

  async get(key: string): Promise<string | null> {
    return this.redis.get(key);
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    await this.redis.set(key, value, "PX", validTtl(ttlMs));
  }

  async del(key: string): Promise<void> {
    await this.redis.del(key);
  }

  async hit(key: string, ttlMs: number): Promise<{ count: number; resetMs: number }> {
    const [count, left] = await (this.redis as unknown as HitCommand).agentplaneHit(key, validTtl(ttlMs, "ttlMs"));
    return { count: Number(count), resetMs: Math.max(0, Number(left)) };
  }

  async ping(timeoutMs = 1_000): Promise<boolean> {
    if (this.redis.status !== "ready") return false;
    let timer: NodeJS.Timeout | undefined;
    const reply = this.redis.ping().then(
      (answer) => answer === "PONG",
      () => false,
    );
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([reply, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Deletes every key under this store's prefix (refuses without a prefix). For tests. */
  async clear(): Promise<number> {
    if (!this.keyPrefix) throw new Error("refusing to clear a Redis store without a key prefix");
    // A cluster's keys live on its masters, each scanned alone; a key is deleted through the
    // cluster client, which routes it to its slot's master (one DEL names keys of one slot only).
    const nodes = this.redis instanceof Cluster ? this.redis.nodes("master") : [this.redis];
    let deleted = 0;
    for (const node of nodes) {
      let cursor = "0";
      do {
        // SCAN's MATCH is not a key argument: ioredis does not prefix it, and returns full names.
        const [next, keys] = await node.scan(cursor, "MATCH", `${escapeGlob(this.keyPrefix)}*`, "COUNT", 500);
        cursor = next;
        const unprefixed = keys.map((key) => key.slice(this.keyPrefix.length));
        if (this.redis instanceof Cluster) {
          const counts = await Promise.all(unprefixed.map((key) => this.redis.del(key)));
          deleted += counts.reduce((a, b) => a + b, 0);
        } else if (unprefixed.length > 0) deleted += await this.redis.del(...unprefixed);
      } while (cursor !== "0");
    }
    return deleted;
  }

  close(): Promise<void> {
    return (this.closing ??= (async () => {
      try {
        if (this.redis.status === "ready") {
          await Promise.race([this.redis.quit(), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
        }
      } catch {
        // fall through to disconnect
      } finally {
        this.redis.disconnect();
      }
    })());
  }
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (char) => `\\${char}`);
}
