import net from "node:net";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testLogger } from "../../test/support/database.js";
import { createTestKv } from "../../test/support/kv.js";
import { openKeyValueStore, type KeyValueStore } from "./kv.js";
import { MemoryKeyValueStore } from "./kv-memory.js";
import { openRedisStore, type RedisKeyValueStore } from "./kv-redis.js";

const redisUrl = process.env.TEST_REDIS_URL;
const mode = redisUrl ? "redis" : "memory";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe(`KeyValueStore (${mode})`, () => {
  let kv: KeyValueStore;
  beforeAll(async () => {
    kv = await createTestKv();
  });
  afterAll(async () => {
    await kv?.close();
  });

  it("is the expected kind and answers ping", async () => {
    expect(kv.kind).toBe(mode);
    expect(await kv.ping()).toBe(true);
  });

  it("gets, sets and deletes", async () => {
    expect(await kv.get("missing")).toBeNull();
    await kv.set("a", "one", 10_000);
    expect(await kv.get("a")).toBe("one");
    await kv.set("a", "two", 10_000);
    expect(await kv.get("a")).toBe("two");
    await kv.del("a");
    expect(await kv.get("a")).toBeNull();
    await kv.del("a"); // absent: fine
  });

  it("expires a value after its TTL", async () => {
    await kv.set("short", "v", 80);
    expect(await kv.get("short")).toBe("v");
    await sleep(150);
    expect(await kv.get("short")).toBeNull();
  });

  it("rejects a TTL that is not positive", async () => {
    await expect(kv.set("x", "v", 0)).rejects.toThrow(RangeError);
    await expect(kv.hit("x", Number.NaN)).rejects.toThrow(RangeError);
  });

  it("counts hits in a fixed window and starts a new window after it", async () => {
    const first = await kv.hit("window", 200);
    expect(first.count).toBe(1);
    expect(first.resetMs).toBeGreaterThan(150);
    expect(first.resetMs).toBeLessThanOrEqual(200);
    await sleep(50);
    const second = await kv.hit("window", 200);
    expect(second.count).toBe(2);
    // The window is fixed: a later hit does not push the expiry out.
    expect(second.resetMs).toBeLessThanOrEqual(first.resetMs - 40);
    expect(await kv.get("window")).toBe("2");
    await sleep(second.resetMs + 30);
    expect((await kv.hit("window", 200)).count).toBe(1);
  });

  it("counts concurrent hits atomically", async () => {
    const results = await Promise.all(Array.from({ length: 50 }, () => kv.hit("burst", 10_000)));
    expect(results.map((r) => r.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });
});

describe("MemoryKeyValueStore", () => {
  it("sweeps expired entries so it does not grow without bound", async () => {
    let now = 1_000;
    const kv = new MemoryKeyValueStore({ now: () => now });
    for (let i = 0; i < 100; i++) await kv.set(`k${i}`, "v", 10);
    await kv.hit("counter", 1_000);
    expect(kv.size).toBe(101);
    now += 20;
    kv.sweep();
    expect(kv.size).toBe(1);
    expect(await kv.get("k1")).toBeNull();
    await kv.close();
  });

  it("sweeps periodically", async () => {
    const kv = new MemoryKeyValueStore({ sweepIntervalMs: 20 });
    await kv.set("k", "v", 5);
    await sleep(80);
    expect(kv.size).toBe(0);
    await kv.close();
  });

  it("fails after close and pings false", async () => {
    const kv = new MemoryKeyValueStore();
    await kv.close();
    expect(await kv.ping()).toBe(false);
    await expect(kv.get("k")).rejects.toThrow(/closed/);
  });

  it("refuses to count a non-numeric value, like Redis", async () => {
    const kv = new MemoryKeyValueStore();
    await kv.set("k", "text", 1_000);
    await expect(kv.hit("k", 1_000)).rejects.toThrow(/not an integer/);
    await kv.close();
  });
});

describe("openKeyValueStore", () => {
  it("falls back to memory and warns that it is single-process only", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, callback) {
        lines.push(String(chunk));
        callback();
      },
    });
    const kv = await openKeyValueStore({ logger: pino({ level: "warn" }, sink) });
    expect(kv.kind).toBe("memory");
    await kv.close();
    expect(lines.join("")).toMatch(/single process/);
  });
});

/** A port where nothing listens. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("Redis unavailable", () => {
  it("rejects calls quickly and pings false", async () => {
    const port = await closedPort();
    const started = Date.now();
    const kv = await openRedisStore({ url: `redis://127.0.0.1:${port}`, logger: testLogger(), connectTimeoutMs: 500 });
    expect(Date.now() - started).toBeLessThan(1_500);
    try {
      for (const call of [
        () => kv.get("k"),
        () => kv.set("k", "v", 1_000),
        () => kv.del("k"),
        () => kv.hit("k", 1_000),
      ]) {
        const t = Date.now();
        await expect(call()).rejects.toThrow();
        expect(Date.now() - t).toBeLessThan(500);
      }
      const t = Date.now();
      expect(await kv.ping(500)).toBe(false);
      expect(Date.now() - t).toBeLessThan(600);
    } finally {
      await kv.close();
    }
  });
});

describe.skipIf(!redisUrl)("Redis store", () => {
  it("keeps key prefixes apart and clears only its own prefix", async () => {
    const a = (await createTestKv()) as RedisKeyValueStore;
    const b = (await createTestKv()) as RedisKeyValueStore;
    try {
      await a.set("same", "a", 10_000);
      await b.set("same", "b", 10_000);
      expect(await a.get("same")).toBe("a");
      expect(await b.get("same")).toBe("b");
      await a.hit("n", 10_000);
      expect(await a.clear()).toBe(2);
      expect(await a.get("same")).toBeNull();
      expect(await b.get("same")).toBe("b");
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("fails fast while Redis is unreachable and recovers by itself when it is back", async () => {
    const target = new URL(redisUrl as string);
    // A TCP proxy to the real Redis that we can take down and bring back on the same port.
    const sockets = new Set<net.Socket>();
    const startProxy = (port: number) =>
      new Promise<net.Server>((resolve) => {
        const server = net.createServer((client) => {
          const upstream = net.connect(Number(target.port || 6379), target.hostname);
          for (const s of [client, upstream]) {
            sockets.add(s);
            s.on("error", () => {});
            s.on("close", () => sockets.delete(s));
          }
          client.pipe(upstream).pipe(client);
        });
        server.listen(port, "127.0.0.1", () => resolve(server));
      });
    let proxy = await startProxy(0);
    const port = (proxy.address() as net.AddressInfo).port;
    const kv = await openRedisStore({
      url: `redis://127.0.0.1:${port}`,
      logger: testLogger(),
      keyPrefix: `agentplane-test:${process.pid}:reconnect:`,
      connectTimeoutMs: 500,
    });
    try {
      await kv.set("k", "v", 10_000);
      expect(await kv.ping()).toBe(true);

      await new Promise((resolve) => {
        proxy.close(resolve);
        for (const s of sockets) s.destroy();
      });
      await sleep(50);
      const t = Date.now();
      await expect(kv.get("k")).rejects.toThrow();
      expect(await kv.ping(300)).toBe(false);
      expect(Date.now() - t).toBeLessThan(1_000);

      proxy = await startProxy(port);
      const deadline = Date.now() + 10_000;
      while (!(await kv.ping(300)) && Date.now() < deadline) await sleep(100);
      expect(await kv.get("k")).toBe("v");
      expect((await kv.hit("h", 10_000)).count).toBe(1);
      await kv.clear();
    } finally {
      await kv.close();
      await new Promise((resolve) => {
        proxy.close(resolve);
        for (const s of sockets) s.destroy();
      });
    }
  });
});
