// DATABASE_READ_URL: the analytics read endpoints answer from the read database (a replica) while
// everything that writes (ingest, rollup, sessions) and authentication stay on the database. A
// second scratch database on the test server stands in for the replica: read-only by default, like
// a hot standby, so a write sent to it would fail; "replication" is pg_dump of the primary's
// analytics rows into it. Needs a real Postgres server (TEST_DATABASE_URL).
import { execFileSync } from "node:child_process";
import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../gen/grpc/health/v1/health_pb.js";
import {
  AnalyticsService,
  TelemetryEventSchema,
  TelemetryService,
} from "../gen/agentplane/analytics/v1/analytics_pb.js";
import { SessionRunnerService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { loadConfig } from "../services/config.js";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { openDatabase, type Database as DatabaseHandle } from "../services/platform/db.js";
import type { KeyValueStore } from "../services/platform/kv.js";
import { IN_MEMORY_DATA_DIR } from "../services/platform/pglite.js";
import { startServer, type RunningServer } from "../services/server.js";
import { daysFrom, generateEvents, type RawEvent } from "./analytics-reference.js";
import { createTestDatabase, testLogger, type TestDatabase } from "./support/database.js";
import {
  api,
  bearer,
  createTestOrg,
  createTestServiceAccount,
  createTestUser,
  type TestUser,
} from "./support/fixtures.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { createTestKv } from "./support/kv.js";
import { startTcpProxy, type TcpProxy } from "./support/tcp-proxy.js";

const SERVER_URL = process.env.TEST_DATABASE_URL;
const DAYS = daysFrom("2026-03-01", "2026-03-07");
const RANGE = `startDate=${DAYS[0]}&endDate=${DAYS[DAYS.length - 1]}`;
const PATHS = [
  `/tokens?${RANGE}`,
  `/tokens?${RANGE}&groupBy=model`,
  `/tools?${RANGE}`,
  `/activity?${RANGE}`,
  `/productivity?${RANGE}`,
  `/users?${RANGE}`,
  `/code?${RANGE}`,
  `/costs?${RANGE}&group_by=model`,
];
/** The tables the analytics endpoints read (the rollup's output). */
const READ_TABLES = ["analytics_daily", "analytics_user_daily", "analytics_user_model_daily"];

async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: SERVER_URL });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

async function waitFor(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 200));
  }
}

const count = async (db: DatabaseHandle<Database>, table: string) =>
  Number((await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}`.execute(db.db)).rows[0]!.n);

describe.skipIf(!SERVER_URL)("DATABASE_READ_URL: analytics reads from a replica", () => {
  let primary: TestDatabase<Database>;
  let replica: TestDatabase<Database>;
  let proxy: TcpProxy;
  let replicaRead: DatabaseHandle<Database>;
  let kv: KeyValueStore;
  let server: RunningServer;
  let plain: RunningServer;
  let owner: TestUser;
  let users: Array<{ id: string; email: string }>;
  let telemetry: GrpcCaller;
  let runner: GrpcCaller;
  let health: GrpcCaller;

  const start = (readDatabase?: DatabaseHandle<Database>) =>
    startServer(
      loadConfig({ PORT: "0", GRPC_PORT: "0", INTERNAL_GRPC_PORT: "0", LOG_LEVEL: "silent", SEED_DEMO: "false" }),
      testLogger(),
      { database: primary, kv, workers: false, ...(readDatabase ? { readDatabase } : {}) },
    );
  const get = (on: RunningServer, path: string, headers: Record<string, string> = {}) =>
    api(on.restUrl!, owner.key, `/api/v1/analytics${path}`, { headers });

  /** Replication catching up: the primary's analytics rows, copied into the read-only replica. */
  function replicate(): void {
    execFileSync(
      "psql",
      ["-q", "-v", "ON_ERROR_STOP=1", "-d", replica.url, "-c", `truncate ${READ_TABLES.join(", ")}`],
      {
        env: { ...process.env, PGOPTIONS: "-c default_transaction_read_only=off" },
      },
    );
    const dump = execFileSync("pg_dump", ["--data-only", ...READ_TABLES.map((t) => `--table=${t}`), primary.url]);
    execFileSync("psql", ["-q", "-v", "ON_ERROR_STOP=1", "-d", replica.url], {
      input: dump,
      env: { ...process.env, PGOPTIONS: "-c default_transaction_read_only=off" },
    });
  }

  async function ingestAndRollUp(events: RawEvent[], days: readonly string[]): Promise<void> {
    const ingested = await telemetry.call(TelemetryService.method.ingest, {
      events: events.map((e) => fromJson(TelemetryEventSchema, e as JsonObject)),
    });
    expect(ingested.accepted).toBe(events.length);
    await telemetry.call(TelemetryService.method.rollup, { fromDate: days[0]!, toDate: days[days.length - 1]! });
  }

  beforeAll(async () => {
    primary = await createTestDatabase<Database>(migrations);
    replica = await createTestDatabase<Database>(migrations);
    // Like a hot standby: every new session of the replica is read-only.
    await admin(`alter database ${pg.escapeIdentifier(replica.name!)} set default_transaction_read_only = on`);
    const target = new URL(replica.url);
    proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    target.port = String(proxy.port);
    replicaRead = await openDatabase<Database>({
      databaseUrl: target.toString(),
      dataDir: IN_MEMORY_DATA_DIR,
      logger: testLogger(),
    });
    kv = await createTestKv();
    server = await start(replicaRead);
    plain = await start();

    const orgId = await createTestOrg(primary.db, "Replica");
    owner = await createTestUser(primary.db, orgId, "owner");
    const member = await createTestUser(primary.db, orgId, "member");
    const token = await createTestServiceAccount(primary.db);
    telemetry = grpcClient(TelemetryService, server.internalGrpcUrl, bearer(token));
    runner = grpcClient(SessionRunnerService, server.internalGrpcUrl, bearer(token));
    health = grpcClient(Health, server.grpcUrl);

    users = [owner, member].map((u) => ({ id: u.userId, email: u.email }));
    await ingestAndRollUp(generateEvents(orgId, users, DAYS, ""), DAYS);
  });
  afterAll(async () => {
    for (const client of [telemetry, runner, health]) client?.close();
    await server?.stop();
    await plain?.stop();
    await replicaRead?.close();
    await kv?.close();
    await proxy?.close();
    await primary?.drop();
    await replica?.drop();
  });

  it("the stand-in replica refuses writes, as a hot standby does", async () => {
    const shown = await sql<{ default_transaction_read_only: string }>`show default_transaction_read_only`.execute(
      replicaRead.db,
    );
    expect(shown.rows[0]!.default_transaction_read_only).toBe("on");
    await expect(sql`create table replica_probe (a int)`.execute(replicaRead.db)).rejects.toThrow(
      /read-only transaction/,
    );
  });

  it("writes (ingest, rollup, sessions) go to the database; the replica has none of them", async () => {
    expect(await count(primary, "analytics_events")).toBeGreaterThan(0);
    expect(await count(primary, "analytics_daily")).toBeGreaterThan(0);
    const session = await runner.call(SessionRunnerService.method.createSession, {
      orgId: owner.orgId,
      userId: owner.userId,
      title: "written to the primary",
    });
    const onPrimary = await sql`select id from sessions where id = ${session.sessionId}`.execute(primary.db);
    expect(onPrimary.rows).toHaveLength(1);
    for (const table of ["analytics_events", "analytics_daily", "sessions", "organizations"])
      expect(await count(replica, table), table).toBe(0);
  });

  it("analytics endpoints answer from the replica: empty until it catches up, then as the primary", async () => {
    // The caller authenticates against the database; the replica has no organizations at all.
    const behind = await get(server, `/tokens?${RANGE}`);
    expect(behind.status).toBe(200);
    expect(behind.json.data).toHaveLength(DAYS.length);
    expect(behind.json.data.every((d: { billable_tokens: number }) => d.billable_tokens === 0)).toBe(true);
    const fromPrimary = await get(plain, `/tokens?${RANGE}`);
    expect(fromPrimary.json.data.some((d: { billable_tokens: number }) => d.billable_tokens > 0)).toBe(true);
    const users = await get(server, `/users?${RANGE}`);
    expect(users.json.data).toEqual([]);
    // /costs too (the events carry no cost and no model has a price: their tokens are unpriced).
    const unpriced = (answer: { json: { data: Array<{ unpriced_tokens: number }> } }) =>
      answer.json.data.reduce((sum, d) => sum + d.unpriced_tokens, 0);
    expect(unpriced(await get(server, `/costs?${RANGE}`))).toBe(0);
    expect(unpriced(await get(plain, `/costs?${RANGE}`))).toBeGreaterThan(0);

    replicate();
    for (const path of PATHS) {
      const [replicaAnswer, primaryAnswer] = [await get(server, path), await get(plain, path)];
      expect(replicaAnswer.status, path).toBe(200);
      expect(replicaAnswer.json, path).toEqual(primaryAnswer.json);
      // The ETag follows the data that answered: the same rows give the same validator.
      expect(replicaAnswer.headers.get("etag"), path).toBe(primaryAnswer.headers.get("etag"));
    }
    expect((await get(server, `/tokens?${RANGE}`)).headers.get("etag")).not.toBe(behind.headers.get("etag"));
    // Compressed /tokens parts come from the replica too (and nothing is written to it).
    const gzip = await get(server, `/tokens?${RANGE}`, { "accept-encoding": "gzip" });
    expect(gzip.status).toBe(200);
    expect(gzip.json).toEqual((await get(plain, `/tokens?${RANGE}`)).json);
    // And over gRPC (no pre-rendered slot), the same data.
    const analytics = grpcClient(AnalyticsService, server.grpcUrl, bearer(owner.key));
    try {
      const viaGrpc = await analytics.call(AnalyticsService.method.getTokens, {
        startDate: DAYS[0]!,
        endDate: DAYS[DAYS.length - 1]!,
      });
      expect(viaGrpc.data.length).toBe(DAYS.length);
    } finally {
      analytics.close();
    }
  });

  it("a replica's validator revalidates against the replica: 304 while it stands, then 200", async () => {
    const first = await get(server, `/users?${RANGE}`);
    const etag = first.headers.get("etag")!;
    expect((await get(server, `/users?${RANGE}`, { "if-none-match": etag })).status).toBe(304);
    // New events for a day on the primary; until the replica replays them, the replica's answer stands.
    const late = generateEvents(owner.orgId, users, [DAYS[0]!], "", 99);
    await ingestAndRollUp(
      late.map((e) => ({ ...e, event_id: `late-${e.event_id}` })),
      [DAYS[0]!],
    );
    expect((await get(plain, `/users?${RANGE}`, { "if-none-match": etag })).status).toBe(200);
    expect((await get(server, `/users?${RANGE}`, { "if-none-match": etag })).status).toBe(304);
    replicate();
    const moved = await get(server, `/users?${RANGE}`, { "if-none-match": etag });
    expect(moved.status).toBe(200);
    expect(moved.headers.get("etag")).toBe((await get(plain, `/users?${RANGE}`)).headers.get("etag"));
  });

  it("unset, reads use the database itself (today's behaviour)", () => {
    expect(plain.readDatabase).toBeUndefined();
    expect(plain.platform.readDb).toBe(plain.platform.db);
    expect(server.platform.readDb).toBe(replicaRead.db);
    expect(server.platform.readDb).not.toBe(server.platform.db);
  });

  it("health pings the replica too: NOT_SERVING while it is unreachable, SERVING once it is back", async () => {
    const status = async () => (await health.call(Health.method.check, { service: "" })).status;
    expect(await status()).toBe(Status.SERVING);
    proxy.cut();
    await waitFor(async () => (await status()) === Status.NOT_SERVING);
    // The server without a read database is unaffected.
    const plainHealth = grpcClient(Health, plain.grpcUrl);
    try {
      expect((await plainHealth.call(Health.method.check, { service: "" })).status).toBe(Status.SERVING);
    } finally {
      plainHealth.close();
    }
    proxy.restore();
    await waitFor(async () => (await status()) === Status.SERVING);
  });
});
