// A slow Postgres (issue 10): statement timeouts and request deadlines turn into 504/503
// answers in bounded time, not into requests that wait forever or connections that pile up.
// The server's pool (5 connections, statement_timeout 1 s) reaches Postgres through a proxy
// (support/pg-proxy.ts) that counts connections and can hold back every reply; the REST edge's
// deadline is REQUEST_TIMEOUT_MS=2000. Two faults: a table locked by another transaction
// (statements wait on Postgres itself until the statement timeout), and a slow link (every
// reply held back 200 ms).
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../services/database.js";
import type { Database as DatabaseHandle } from "../../services/platform/db.js";
import type { TestDatabase } from "../support/database.js";
import { api } from "../support/fixtures.js";
import { recordFigures } from "./support/figures.js";
import { startServerBehindProxy, type ServerBehindProxy } from "./support/server-behind-proxy.js";
import { sleep } from "./support/load.js";
import type { PgProxy } from "./support/pg-proxy.js";
import { seedOrg, type Org } from "./support/world.js";

const REAL = Boolean(process.env.TEST_DATABASE_URL);
const POOL = 5;
/** The connection that LISTENs for credential changes, beside the pool. */
const LISTENER = 1;
const STATEMENT_TIMEOUT_MS = 1_000;
const DEADLINE_MS = 2_000;
const BURST = 30;

describe.skipIf(!REAL)(`a slow Postgres${REAL ? "" : " (skipped: needs TEST_DATABASE_URL)"}`, () => {
  let world: ServerBehindProxy;
  let proxy: PgProxy;
  let database: TestDatabase<Database>;
  let handle: DatabaseHandle<Database>;
  let server: ServerBehindProxy["server"];
  let org: Org;

  beforeAll(async () => {
    world = await startServerBehindProxy({
      poolMax: POOL,
      statementTimeoutMs: STATEMENT_TIMEOUT_MS,
      env: { REQUEST_TIMEOUT_MS: String(DEADLINE_MS) },
    });
    ({ proxy, database, handle, server } = world);
    org = await seedOrg(handle.db, server.restUrl, server.internalGrpcUrl, "S", { demo: false });
  }, 120_000);
  afterAll(() => world?.close());

  const burst = async (path: string) => {
    const started = performance.now();
    return Promise.all(
      Array.from({ length: BURST }, async () => {
        const t = performance.now();
        const res = await api(server.restUrl, org.members.owner.key, path);
        return { status: res.status, ms: performance.now() - t, body: res.json, since: t - started };
      }),
    );
  };

  it("statements blocked behind a lock end at the statement timeout or the deadline: 504/503, bounded, no pile-up", async () => {
    const path = `/api/v0/sessions/${org.sessions.owner}`;
    expect((await api(server.restUrl, org.members.owner.key, path)).status).toBe(200);
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    await locker.query("begin; lock table sessions in access exclusive mode");
    proxy.resetPeak();
    let answers: Awaited<ReturnType<typeof burst>>;
    let waitingAtMost = 0;
    const tick = setInterval(() => (waitingAtMost = Math.max(waitingAtMost, handle.pool.waitingCount)), 20);
    try {
      answers = await burst(path);
    } finally {
      clearInterval(tick);
      await locker.query("rollback");
      await locker.end();
    }
    const statuses = [...new Set(answers.map((a) => a.status))].sort();
    expect(
      statuses.every((s) => s === 503 || s === 504),
      `statuses ${statuses}`,
    ).toBe(true);
    expect(answers.every((a) => a.body && Object.keys(a.body).sort().join() === "detail,requestId,status,title")).toBe(
      true,
    );
    const slowest = Math.max(...answers.map((a) => a.ms));
    expect(slowest).toBeLessThan(DEADLINE_MS + 1_000);
    // Every connection the server opens goes through the proxy: never more than the pool, plus
    // the one that listens for credential changes (organization/credential-changes.ts).
    expect(proxy.peak).toBeLessThanOrEqual(POOL + LISTENER);
    expect(waitingAtMost, "requests queued for a connection").toBeGreaterThan(0);
    // Once the lock is gone the pool is usable again at once.
    await sleep(STATEMENT_TIMEOUT_MS);
    const after = await burst(path);
    expect(after.every((a) => a.status === 200)).toBe(true);
    recordFigures("fault postgres lock", {
      faultsInjected: 1,
      requests: answers.length,
      statuses: Object.fromEntries(statuses.map((s) => [s, answers.filter((a) => a.status === s).length])),
      slowestMs: Math.round(slowest),
      peakConnections: proxy.peak,
      poolMax: POOL,
      queuedForConnectionAtMost: waitingAtMost,
      afterwardsOk: after.length,
    });
  }, 60_000);

  it("a slow link: answers within the deadline or 504/503 at it, never more connections than the pool", async () => {
    const path = `/api/v0/sessions/${org.sessions.owner}/messages`;
    expect((await api(server.restUrl, org.members.owner.key, path)).status).toBe(200);
    proxy.resetPeak();
    proxy.slow(200);
    let answers: Awaited<ReturnType<typeof burst>>;
    try {
      answers = await burst(path);
    } finally {
      proxy.slow(0);
    }
    const statuses = [...new Set(answers.map((a) => a.status))].sort();
    expect(
      statuses.every((s) => s === 200 || s === 503 || s === 504),
      `statuses ${statuses}`,
    ).toBe(true);
    expect(
      statuses.some((s) => s !== 200),
      "the deadline was reached",
    ).toBe(true);
    const slowest = Math.max(...answers.map((a) => a.ms));
    expect(slowest).toBeLessThan(DEADLINE_MS + 1_000);
    expect(proxy.peak).toBeLessThanOrEqual(POOL + LISTENER);
    // Work abandoned at the deadline drains; then everything is fast again.
    await sleep(3_000);
    const after = await burst(path);
    expect(after.every((a) => a.status === 200)).toBe(true);
    expect(Math.max(...after.map((a) => a.ms))).toBeLessThan(DEADLINE_MS);
    recordFigures("fault postgres slow link", {
      faultsInjected: 1,
      requests: answers.length,
      statuses: Object.fromEntries(statuses.map((s) => [s, answers.filter((a) => a.status === s).length])),
      slowestMs: Math.round(slowest),
      peakConnections: proxy.peak,
      poolMax: POOL,
      afterwardsOk: after.length,
    });
  }, 60_000);
});
