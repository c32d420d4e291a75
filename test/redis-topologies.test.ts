// REDIS_URL's Sentinel and Cluster forms against real, private Redis servers started here (on
// free ports, never the shared one): a master, a replica and a Sentinel watching them, through a
// failover; and a three-master Redis Cluster made with `redis-cli --cluster create`. Skipped when
// redis-server is not installed.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KeyValueStore } from "../services/platform/kv.js";
import { openRedisStore, type RedisKeyValueStore } from "../services/platform/kv-redis.js";
import { testLogger } from "./support/database.js";

const HAVE_REDIS = (() => {
  try {
    execFileSync("redis-server", ["--version"]);
    return true;
  } catch {
    return false;
  }
})();

/** A port that is free now, whose cluster bus port (+10 000) is free too. */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 30_000);
    if ((await canListen(port)) && (await canListen(port + 10_000))) return port;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

async function waitFor(check: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check().catch(() => false))) {
    if (Date.now() > until) throw new Error(`${what}: not reached in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function cli(port: number, ...args: string[]): string {
  return execFileSync("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], { encoding: "utf8" });
}

/** Private redis-server processes in a scratch directory, stopped (by their pids) at the end. */
class Servers {
  readonly dir = mkdtempSync(join(tmpdir(), "agentplane-redis-"));
  private readonly children: ChildProcess[] = [];

  async start(port: number, args: string[] = [], configFile?: string): Promise<void> {
    const argv = [
      ...(configFile ? [configFile] : []),
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--dir",
      this.dir,
      ...args,
    ];
    const child = spawn("redis-server", argv, { stdio: "ignore" });
    this.children.push(child);
    await waitFor(async () => cli(port, "ping").trim() === "PONG", `redis-server on ${port}`);
  }

  async stop(): Promise<void> {
    for (const child of this.children) {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGKILL");
        await exited;
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** What every topology must do the same: the operations KeyValueStore promises. */
async function exercise(store: KeyValueStore, keys: readonly string[]): Promise<void> {
  for (const key of keys) {
    await store.set(`cursor:${key}`, `v-${key}`, 60_000);
    expect(await store.get(`cursor:${key}`)).toBe(`v-${key}`);
    expect(await store.hit(`rl:${key}`, 60_000)).toMatchObject({ count: 1 });
    const again = await store.hit(`rl:${key}`, 60_000);
    expect(again.count).toBe(2);
    expect(again.resetMs).toBeGreaterThan(50_000);
    await store.del(`cursor:${key}`);
    expect(await store.get(`cursor:${key}`)).toBeNull();
  }
  expect(await store.ping()).toBe(true);
}

describe.skipIf(!HAVE_REDIS)("REDIS_URL=redis+sentinel://…: the master the Sentinel names", () => {
  const servers = new Servers();
  let master: number;
  let replica: number;
  let sentinel: number;
  let store: RedisKeyValueStore;

  beforeAll(async () => {
    [master, replica, sentinel] = [await freePort(), await freePort(), await freePort()];
    await servers.start(master);
    await servers.start(replica, ["--replicaof", "127.0.0.1", String(master)]);
    const conf = join(servers.dir, "sentinel.conf");
    writeFileSync(
      conf,
      [
        `sentinel monitor agentplane 127.0.0.1 ${master} 1`,
        "sentinel down-after-milliseconds agentplane 1000",
        "sentinel failover-timeout agentplane 5000",
        "",
      ].join("\n"),
    );
    await servers.start(sentinel, ["--sentinel"], conf);
    // The Sentinel learns of the replica from the master's INFO.
    await waitFor(
      async () => cli(sentinel, "sentinel", "replicas", "agentplane").includes(String(replica)),
      "the Sentinel sees the replica",
    );
    await waitFor(async () => cli(replica, "info", "replication").includes("master_link_status:up"), "replication");
    store = await openRedisStore({
      url: `redis+sentinel://127.0.0.1:${sentinel}/agentplane`,
      logger: testLogger(),
      keyPrefix: "sentinel-test:",
    });
  }, 60_000);
  afterAll(async () => {
    await store?.close();
    await servers.stop();
  });

  it("connects to the master through the Sentinel and does every operation", async () => {
    await exercise(store, ["a", "b", "c"]);
    expect(cli(master, "get", "sentinel-test:rl:a").trim()).toBe("2");
  });

  it("follows a failover to the promoted replica", async () => {
    cli(sentinel, "sentinel", "failover", "agentplane");
    await waitFor(
      async () => cli(sentinel, "sentinel", "get-master-addr-by-name", "agentplane").includes(String(replica)),
      "the Sentinel names the replica",
    );
    // Writes reach the new master once ioredis has heard of the switch (or been refused by the
    // demoted master and asked the Sentinel again); meanwhile they may fail, never hang.
    await waitFor(async () => {
      await store.set("after-failover", "yes", 60_000);
      return cli(replica, "get", "sentinel-test:after-failover").trim() === "yes";
    }, "a write reaching the promoted replica");
    expect(cli(replica, "role")).toMatch(/^master/);
    // The Sentinel then turns the old master into a replica of the new one; the store stays on the new master.
    await waitFor(async () => cli(master, "role").startsWith("slave"), "the old master demoted");
    await exercise(store, ["d"]);
  }, 30_000);
});

describe.skipIf(!HAVE_REDIS)("REDIS_URL=redis+cluster://…: Redis Cluster", () => {
  const servers = new Servers();
  let ports: number[];
  let store: RedisKeyValueStore;

  beforeAll(async () => {
    ports = [await freePort(), await freePort(), await freePort()];
    for (const port of ports)
      await servers.start(port, [
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        `nodes-${port}.conf`,
        "--cluster-node-timeout",
        "2000",
      ]);
    execFileSync(
      "redis-cli",
      ["--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"],
      { stdio: "ignore" },
    );
    for (const port of ports)
      await waitFor(async () => cli(port, "cluster", "info").includes("cluster_state:ok"), `cluster on ${port}`);
    // One seed node is enough: ioredis learns the rest from it.
    store = await openRedisStore({
      url: `redis+cluster://127.0.0.1:${ports[0]}`,
      logger: testLogger(),
      keyPrefix: "cluster-test:",
    });
  }, 60_000);
  afterAll(async () => {
    await store?.close();
    await servers.stop();
  });

  it("does every operation on keys spread over every master's slots", async () => {
    const keys = Array.from({ length: 40 }, (_, i) => `key-${i}`);
    // The keys land on all three masters (16 384 slots in three ranges).
    const slotOf = (key: string) => Number(cli(ports[0]!, "cluster", "keyslot", key).trim());
    const thirds = new Set(keys.map((k) => Math.floor(slotOf(`cluster-test:rl:${k}`) / 5462)));
    expect(thirds.size).toBe(3);
    await exercise(store, keys);
    // Each counter lives on the master of its slot, under the prefix.
    const owners = new Set<number>();
    for (const key of keys) {
      const found = ports.filter((p) => cli(p, "get", `cluster-test:rl:${key}`).trim() === "2");
      expect(found, key).toHaveLength(1);
      owners.add(found[0]!);
    }
    expect(owners.size).toBe(3);
  });

  it("clear() empties the prefix on every master, deleting key by key (one DEL may not cross slots)", async () => {
    const direct = new Redis(ports[0]!, "127.0.0.1");
    try {
      await expect(direct.call("del", "cluster-test:rl:key-0", "cluster-test:rl:key-1")).rejects.toThrow(
        /CROSSSLOT|MOVED/,
      );
    } finally {
      direct.disconnect();
    }
    expect(await store.clear()).toBe(40);
    for (const port of ports) expect(cli(port, "--scan", "--pattern", "cluster-test:*").trim()).toBe("");
  });
});
