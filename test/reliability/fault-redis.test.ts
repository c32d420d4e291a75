// Redis stopped during load and restarted (issue 10). The server runs on a Redis of the test's
// own (support/redis-process.ts; the machine's shared one is never touched): killed with SIGKILL
// while clients post messages and page through lists, then started again on the same port.
// While it is down, every request that needs it (all of them: rate limits are counted there)
// fails fast with a 503 and the error body; within seconds of its return requests succeed
// again; every message acknowledged with a 200 is in Postgres afterwards.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../services/database.js";
import { migrations } from "../../services/migrations.js";
import { openRedisStore, type RedisKeyValueStore } from "../../services/platform/kv-redis.js";
import { createTestDatabase, testLogger, type TestDatabase } from "../support/database.js";
import { api } from "../support/fixtures.js";
import { recordFigures } from "./support/figures.js";
import { startServerOn } from "./support/in-process-server.js";
import { sleep, startLoad } from "./support/load.js";
import { hasRedisServer, startRedisProcess, type RedisProcess } from "./support/redis-process.js";
import { seedOrg, type Org } from "./support/world.js";

const REAL = Boolean(process.env.TEST_DATABASE_URL) && hasRedisServer();
const OUTAGE_MS = 3_000;

describe.skipIf(!REAL)(
  `Redis killed during load and restarted${REAL ? "" : " (skipped: needs TEST_DATABASE_URL and the redis-server binary)"}`,
  () => {
    let redis: RedisProcess;
    let kv: RedisKeyValueStore;
    let database: TestDatabase<Database>;
    let server: Awaited<ReturnType<typeof startServerOn>>;
    let org: Org;

    beforeAll(async () => {
      redis = await startRedisProcess();
      database = await createTestDatabase<Database>(migrations);
      kv = await openRedisStore({ url: redis.url, logger: testLogger() });
      server = await startServerOn(database, kv);
      org = await seedOrg(database.db, server.restUrl, server.internalGrpcUrl, "R", { demo: false });
    }, 120_000);
    afterAll(async () => {
      await server?.stop();
      await kv?.close();
      await redis?.close();
      await database?.drop();
    });

    it("fails fast with 503 while Redis is down, recovers within seconds, and loses no acknowledged write", async () => {
      const session = org.sessions.owner;
      const key = org.members.owner.key;
      const load = startLoad<string>(6, async (w, n) => {
        if (n % 2 === 0) {
          const res = await api(server.restUrl, key, `/api/v0/sessions/${session}/messages`, {
            method: "POST",
            body: { text: `redis-fault w${w} n${n}` },
          });
          if (res.status >= 400) checkErrorBody(res);
          return { status: res.status, value: res.status === 200 ? res.json.messageId : undefined };
        }
        // A list page and its next page: the cursor lives in Redis too.
        const first = await api(server.restUrl, key, `/api/v0/sessions/${session}/messages?limit=2`);
        if (first.status !== 200) {
          checkErrorBody(first);
          return { status: first.status };
        }
        const next = first.json.pagination.nextCursor;
        const second = next
          ? await api(server.restUrl, key, `/api/v0/sessions/${session}/messages?limit=2&cursor=${next}`)
          : first;
        if (second.status >= 400) checkErrorBody(second);
        return { status: second.status };
      });

      await sleep(1_500);
      const killedAt = load.now();
      await redis.kill();
      await sleep(OUTAGE_MS);
      const restartedAt = load.now();
      await redis.start();
      await sleep(5_000);
      const outcomes = await load.stop();

      const before = outcomes.filter((o) => o.at + o.ms < killedAt);
      const down = outcomes.filter((o) => o.at > killedAt + 100 && o.at + o.ms < restartedAt);
      const after = outcomes.filter((o) => o.at > restartedAt);
      expect(before.length).toBeGreaterThan(10);
      expect(before.every((o) => o.status === 200)).toBe(true);
      // Down: only 503s, each fast (no queueing behind a dead connection).
      expect(down.length).toBeGreaterThan(10);
      expect([...new Set(down.map((o) => o.status))]).toEqual([503]);
      expect(Math.max(...down.map((o) => o.ms))).toBeLessThan(1_500);
      // Recovery: the first success after the restart comes within seconds, and from then on
      // everything succeeds.
      const firstOk = after.find((o) => o.status === 200);
      expect(firstOk, "a success after the restart").toBeDefined();
      const recoveryMs = firstOk!.at - restartedAt;
      expect(recoveryMs).toBeLessThan(5_000);
      const settled = after.filter((o) => o.at > firstOk!.at + 500);
      expect(settled.length).toBeGreaterThan(10);
      expect(
        settled.every((o) => o.status === 200),
        JSON.stringify(settled.filter((o) => o.status !== 200).slice(0, 3)),
      ).toBe(true);
      expect(outcomes.some((o) => o.status === 0 || (o.status >= 500 && o.status !== 503))).toBe(false);

      // Nothing acknowledged is lost: every 200'd message is stored and readable.
      const acked = outcomes.filter((o) => o.status === 200 && o.value).map((o) => o.value!);
      const stored = await database.db.selectFrom("messages").select("id").where("session_id", "=", session).execute();
      const ids = new Set(stored.map((m) => m.id));
      expect(acked.filter((id) => !ids.has(id))).toEqual([]);
      const read = await api(server.restUrl, key, `/api/v0/sessions/${session}/messages/${acked[acked.length - 1]}`);
      expect(read.status).toBe(200);
      recordFigures("fault redis", {
        requests: outcomes.length,
        faultsInjected: 1,
        outageMs: OUTAGE_MS,
        answered503WhileDown: down.length,
        slowest503Ms: Math.round(Math.max(...down.map((o) => o.ms))),
        recoveryMs: Math.round(recoveryMs),
        acknowledgedWrites: acked.length,
        lostWrites: acked.filter((id) => !ids.has(id)).length,
      });
    }, 60_000);
  },
);

function checkErrorBody(res: { status: number; json: any; headers: Headers }) {
  expect(Object.keys(res.json ?? {}).sort()).toEqual(["detail", "requestId", "status", "title"]);
  expect(res.json.status).toBe(res.status);
}
