// A key-value store per caller: Redis from TEST_REDIS_URL under a unique key prefix (its keys are
// deleted on close), else the in-process store.
import type { KeyValueStore } from "../../services/platform/kv.js";
import { MemoryKeyValueStore } from "../../services/platform/kv-memory.js";
import { openRedisStore, type RedisKeyValueStore } from "../../services/platform/kv-redis.js";
import { testLogger } from "./database.js";

export async function createTestKv(options: { redisUrl?: string | undefined } = {}): Promise<KeyValueStore> {
  const redisUrl = "redisUrl" in options ? options.redisUrl : process.env.TEST_REDIS_URL;
  if (!redisUrl) return new MemoryKeyValueStore();
  const keyPrefix = `agentplane-test:${process.pid}:${Math.random().toString(36).slice(2, 10)}:`;
  const store: RedisKeyValueStore = await openRedisStore({ url: redisUrl, logger: testLogger(), keyPrefix });
  const close = store.close.bind(store);
  let closing: Promise<void> | null = null;
  // Own property shadows the prototype's: clean up the prefix, then disconnect.
  return Object.assign(store, {
    close: () =>
      (closing ??= (async () => {
        try {
          await store.clear();
        } catch {
          // Redis gone: nothing to clean up that we can reach
        }
        await close();
      })()),
  });
}
