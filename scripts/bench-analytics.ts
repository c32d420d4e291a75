// Analytics benchmark (npm run bench:analytics): generates an organization's telemetry, ingests
// it, rolls it up, times the nightly sweep of the last day (freshness: midnight UTC to queryable),
// measures the REST edge's latency on 90-day reads, and times OTLP ingest (Claude Code's log
// events and token-usage points, protobuf over HTTP to the service) beside the native ingest.
//
//   npm run bench:analytics                          10,000 users, 90 days, about 20 million events
//   npm run bench:analytics -- --users 1000 --events 2000000      a quicker, smaller run
//
// Options: --users N, --days N, --events N (target total; scales the turns per session),
// --concurrency N (ingest batches, and OTLP exports, in flight, default 2), --batch N (events per
// ingest call and items per OTLP export, default 10000), --requests N (per endpoint, default
// 100), --without-ids (events without event_id: skips the idempotency claims), --keep (keep the
// database), --reuse NAME (a database an earlier run kept: no generating or ingest, only the
// rollup and the reads), --json, --cpu-prof (the service under node --cpu-prof: its profile over
// the OTLP ingest is summarised), --help.
//
// Reads come from a load generator in a process of its own (bench/timed-gets.ts), over one
// keep-alive connection, timed to the last byte received, not decoded; each case's last answer
// is then decoded and checked. /tokens is timed three times: as text, compressed as a browser
// asks for it (`Accept-Encoding: gzip, deflate, br`, as fetch and curl --compressed also send:
// gzip) and from a client that takes deflate only; the time a client takes to decompress the
// browser's answer is printed beside it.
//
// The reads go to the service in a process of its own (compiled, `agentplane serve`, all
// modules), as deployed: a server in this process would share its event loop with the client,
// and its heap with the generator's garbage. On PGlite (no DATABASE_URL) it runs in this process.
//
// Database: a fresh database on DATABASE_URL's (or TEST_DATABASE_URL's) server, dropped at the
// end; without either, an in-memory PGlite (far slower: one transaction at a time).
import { spawn } from "node:child_process";
import { mkdtemp, readdir } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql, type Kysely } from "kysely";
import { parseArgs } from "node:util";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { addDays, dayOf, eachDay } from "../services/analytics/dates.js";
import type { IncomingEvent } from "../services/analytics/ingest/events.js";
import { generateTelemetry } from "../services/analytics/generate.js";
import { ingestEvents } from "../services/analytics/ingest/ingest.js";
import { rollupRange } from "../services/analytics/rollup/rollup.js";
import { runTick, TICK_MINUTE } from "../services/analytics/rollup/scheduler.js";
import { createApiKey, createOrganization } from "../services/organization/queries.js";
import { newId } from "../services/platform/ids.js";
import { loadConfig } from "../services/config.js";
import { openDatabase } from "../services/platform/db.js";
import { MemoryKeyValueStore } from "../services/platform/kv-memory.js";
import { migrateToLatest } from "../services/platform/migrator.js";
import { IN_MEMORY_DATA_DIR } from "../services/platform/pglite.js";
import { createLogger } from "../services/platform/logger.js";
import { startServer } from "../services/server.js";
import { createTestDatabase } from "../test/support/database.js";
import { buildService } from "../bench/build.js";
import { summarizeProfile } from "../bench/profile-summary.js";
import { logExports, metricExports } from "../bench/otlp-exports.js";
import { fromBinary } from "@bufbuild/protobuf";
import {
  ExportLogsServiceRequestSchema,
  ExportLogsServiceResponseSchema,
} from "../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import {
  ExportMetricsServiceRequestSchema,
  ExportMetricsServiceResponseSchema,
} from "../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import { type GrpcIngestTiming, timeIngestOverGrpc } from "../bench/grpc-ingest.js";
import { createServiceAccount } from "../services/organization/service-accounts.js";
import {
  addSpent,
  type CpuSpent,
  cpuWindow,
  NO_CPU_SPENT,
  pidsNamed,
  startCompiledService,
  threadOf,
} from "../bench/processes.js";

const { values: args } = parseArgs({
  options: {
    users: { type: "string", default: "10000" },
    days: { type: "string", default: "90" },
    events: { type: "string", default: "20000000" },
    concurrency: { type: "string", default: "2" },
    batch: { type: "string", default: "10000" },
    requests: { type: "string", default: "100" },
    "without-ids": { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
    reuse: { type: "string" },
    json: { type: "boolean", default: false },
    "cpu-prof": { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (args.help) {
  process.stdout.write(
    "npm run bench:analytics -- [--users N] [--days N] [--events N] [--concurrency N] [--batch N] [--requests N]\n" +
      "  [--without-ids] [--keep] [--reuse NAME] [--json] [--cpu-prof]   (scripts/bench-analytics.ts says what each does)\n",
  );
  process.exit(0);
}

const USERS = Number(args.users);
const DAYS = Number(args.days);
const TARGET = Number(args.events);
const CONCURRENCY = Number(args.concurrency);
const BATCH = Number(args.batch);
const REQUESTS = Number(args.requests);
/** One seed for the sample that scales the generator and for the data: runs are comparable. */
const SEED = 20261122;
for (const [name, v] of Object.entries({ USERS, DAYS, TARGET, CONCURRENCY, BATCH, REQUESTS })) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name.toLowerCase()} must be a positive integer`);
}

const log = (line: string) => {
  if (!args.json) process.stderr.write(`${line}\n`);
};

/** The processes the CPU windows (bench/processes.ts cpuWindow) account for. */
const here = async () => [process.pid];
const postgres = () => pidsNamed("postgres");
const hereAndPostgres = { here, postgres };

/** CPU per item (µs) of each group over a window, and the machine's share idle. */
interface CpuPerItem {
  micros: Record<string, number>;
  idle: number;
}

function perItem(spent: CpuSpent, items: number): CpuPerItem {
  return {
    micros: Object.fromEntries(Object.entries(spent.ms).map(([k, ms]) => [k, +((ms * 1000) / items).toFixed(1)])),
    idle: spent.totalMs > 0 ? +(1 - spent.busyMs / spent.totalMs).toFixed(2) : NaN,
  };
}

/** "the service 9.1 µs, postgres 8.2 µs; machine idle 12%" */
const cpuText = (cpu: CpuPerItem) =>
  `${Object.entries(cpu.micros)
    .map(([k, us]) => `${k} ${us} µs`)
    .join(", ")}; machine idle ${Math.round(cpu.idle * 100)}%`;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

/** A database an earlier run kept (--keep), migrated to the latest schema. */
async function openKeptDatabase(serverUrl: string | undefined, name: string, logger: ReturnType<typeof createLogger>) {
  if (!serverUrl) throw new Error("--reuse needs DATABASE_URL");
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const database = await openDatabase<Database>({ databaseUrl: url.toString(), dataDir: IN_MEMORY_DATA_DIR, logger });
  await migrateToLatest(database.db, migrations, logger);
  return { ...database, name, drop: () => database.close() };
}

/** The benchmark organization of a kept database, and a new API key of its owner. */
async function keptOrganization(db: Kysely<Database>): Promise<{ orgId: string; key: string }> {
  const owner = await db
    .selectFrom("users")
    .innerJoin("organizations", "organizations.id", "users.org_id")
    .select(["users.id as userId", "users.org_id as orgId"])
    .where("organizations.name", "=", "Benchmark Org")
    .where("users.role", "=", "owner")
    .executeTakeFirstOrThrow();
  const { key } = await createApiKey(db, owner.orgId, owner.userId);
  return { orgId: owner.orgId, key };
}

const ROOT = fileURLToPath(new URL("..", import.meta.url));

interface TimedGets {
  times: number[];
  bytes: number;
  encoding: string | null;
  inflateMs: number | null;
  /** Pages walked (timed GETs) when the job walks pages. */
  pages: number;
}

/** Runs the load generator (bench/timed-gets.ts, compiled) in a process of its own. */
function timedGets(
  buildDir: string,
  job: { url: string; headers: Record<string, string>; warmup: number; count: number; pageCursor?: string },
): Promise<TimedGets> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(buildDir, "bench/timed-gets.js"), JSON.stringify(job)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => (err += d.toString("utf8")));
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0
        ? resolve(JSON.parse(out) as TimedGets)
        : reject(new Error(`the load generator failed (${code}): ${err.slice(0, 2000)}`)),
    );
  });
}

/**
 * The service the reads go to: `agentplane serve` compiled (bench/build.ts), in a child process,
 * on the benchmark's database; in this process when the database is an in-memory PGlite.
 */
async function startReadServer(
  buildDir: string,
  serverUrl: string | undefined,
  dbName: string | null,
  logger: ReturnType<typeof createLogger>,
  database: NonNullable<Parameters<typeof startServer>[2]>["database"],
) {
  if (serverUrl === undefined || dbName === null) {
    const config = loadConfig({
      PORT: "0",
      GRPC_PORT: "0",
      INTERNAL_GRPC_PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      SEED_DEMO: "false",
    });
    const server = await startServer(config, logger, { database, kv: new MemoryKeyValueStore(), workers: false });
    if (server.restUrl === undefined) throw new Error("the service started without its REST edge");
    return {
      restUrl: server.restUrl,
      grpc: { publicUrl: server.grpcUrl, internalUrl: server.internalGrpcUrl },
      description: "the service in this process (in-memory PGlite)",
      /** The service's process, for its CPU: here, this one (the client's CPU is counted in it too). */
      pid: process.pid,
      stop: () => server.stop(),
      profile: undefined,
    };
  }
  const url = new URL(serverUrl);
  url.pathname = `/${dbName}`;
  const logFile = join(tmpdir(), `agentplane-bench-analytics-${process.pid}.log`);
  const profileDir = args["cpu-prof"] ? await mkdtemp(join(tmpdir(), "agentplane-bench-analytics-profile-")) : null;
  const started = performance.now();
  const child = await startCompiledService(buildDir, url.toString(), logFile, ROOT, {
    env: {
      SERVICES: "all",
      // The reads only: the rollup schedule would first re-roll every day this run's rollup (one
      // organization's, as `agentplane rollup --org` does) did not record as swept.
      WORKERS: "false",
    },
    nodeArgs: profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [],
  });
  return {
    restUrl: child.restUrl,
    grpc: { publicUrl: child.grpcUrl, internalUrl: child.internalGrpcUrl },
    description: `agentplane serve in a child process (log: ${logFile})`,
    pid: child.child.pid!,
    stop: () => child.stop(),
    /** With --cpu-prof, the service's profile (once stopped) over these periods (performance.now()). */
    profile: profileDir
      ? async (periods: ReadonlyArray<{ from: number; to: number }>) => {
          const files = (await readdir(profileDir)).filter((f) => f.endsWith(".cpuprofile"));
          const windows = periods.map((p) => ({ fromMs: p.from - started, toMs: p.to - started }));
          const summaries = await Promise.all(
            files.map((f) =>
              summarizeProfile(join(profileDir, f), [buildDir, ROOT], 30, windows).then(
                (s) => `${join(profileDir, f)}:\n${s}`,
              ),
            ),
          );
          return summaries.join("\n");
        }
      : undefined,
  };
}

/**
 * Items (log records or data points) of each OTLP export: the native ingest's batch, so that both
 * are compared at one batch size and concurrency (within the receiver's cap of 100,000 an export);
 * and exports of each kind, about 100,000 items.
 */
const OTLP_PER_EXPORT = Math.min(BATCH, 100_000);
const OTLP_EXPORTS = Math.max(2 * CONCURRENCY, Math.ceil(100_000 / OTLP_PER_EXPORT));
/** Exports of each kind sent untimed before the timed ones (about 20,000 items): the service's code warm. */
const OTLP_WARMUP_EXPORTS = Math.max(CONCURRENCY, Math.ceil(20_000 / OTLP_PER_EXPORT));

interface OtlpIngest {
  logRecordsPerSecond: number;
  /** Token points by collection, as an SDK exports them (bench/otlp-exports.ts). */
  dataPointsPerSecond: number;
  /** Token points each at a time of its own: none folds into another's row (the store's worst case). */
  apartDataPointsPerSecond: number;
  /** When the exports were sent (performance.now()), for the service's profile. */
  periods: Array<{ from: number; to: number }>;
  /**
   * The native ingest's events/s timed just before and after each kind (their mean), when this
   * run generated events: a ratio of rates measured minutes apart on a shared machine says more
   * of the machine's load than of the code.
   */
  nativeBeside: { logs: number; metrics: number } | null;
  /** CPU per log record and per data point: the service (every thread; its main thread apart), Postgres, this process (the client). */
  cpu: { logs: CpuPerItem; metrics: CpuPerItem; metricsApart: CpuPerItem };
  /** CPU per event of the native ingest timed beside them (every turn): this process and Postgres. */
  nativeCpu: CpuPerItem | null;
}

/**
 * OTLP ingest as exporters send it: protobuf bodies (bench/otlp-exports.ts) POSTed to the service's
 * /v1/logs and /v1/metrics, CONCURRENCY in flight, from an organization-bound service account with
 * the analytics.ingest scope, which attributes each export by the user.email of its resource. Every
 * answer must be a 200 with nothing rejected.
 */
async function timeOtlpIngest(
  db: Kysely<Database>,
  orgId: string,
  restUrl: string,
  servicePid: number,
  native: NativeTurns | null,
): Promise<OtlpIngest> {
  const { token } = await createServiceAccount(db, { name: "bench OTLP", scopes: ["analytics.ingest"], orgId });
  const emails = (
    await db.selectFrom("users").select("email").where("org_id", "=", orgId).orderBy("id").limit(1000).execute()
  ).map((u) => u.email);
  const spec = { emails, exports: OTLP_EXPORTS, itemsPerExport: OTLP_PER_EXPORT, startMs: Date.now() - 3_600_000 };
  const periods: OtlpIngest["periods"] = [];
  const cpu: Partial<OtlpIngest["cpu"]> = {};
  const post = async (
    path: string,
    bodies: Uint8Array[],
    rejectedOf: (answer: Uint8Array) => bigint,
    kind?: keyof OtlpIngest["cpu"],
  ) => {
    let next = 0;
    const window = await cpuWindow({
      service: async () => [servicePid],
      "its main thread": async () => [threadOf(servicePid)],
      postgres,
      "this process": here,
    });
    const started = performance.now();
    const worker = async () => {
      while (next < bodies.length) {
        const body = bodies[next++]!;
        const res = await fetch(restUrl + path, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/x-protobuf" },
          body,
        });
        const answer = new Uint8Array(await res.arrayBuffer());
        if (res.status !== 200)
          throw new Error(`${path}: ${res.status} ${Buffer.from(answer).toString("utf8").slice(0, 300)}`);
        const rejected = rejectedOf(answer);
        if (rejected !== 0n) throw new Error(`${path}: ${rejected} items rejected`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const ended = performance.now();
    periods.push({ from: started, to: ended });
    const spent = await window();
    if (kind) cpu[kind] = perItem(spent, bodies.length * OTLP_PER_EXPORT);
    return (bodies.length * OTLP_PER_EXPORT) / ((ended - started) / 1000);
  };
  const logsRejected = (a: Uint8Array) =>
    fromBinary(ExportLogsServiceResponseSchema, a).partialSuccess?.rejectedLogRecords ?? 0n;
  const pointsRejected = (a: Uint8Array) =>
    fromBinary(ExportMetricsServiceResponseSchema, a).partialSuccess?.rejectedDataPoints ?? 0n;
  const logBodies = logExports(spec);
  const metricBodies = metricExports({ ...spec, startMs: spec.startMs + 1 });
  // Untimed exports first, of records and points of their own (an earlier hour, so none is a
  // retry of a timed one): the native ingest is timed warm, after the main ingest, and so is this.
  const warm = { ...spec, exports: OTLP_WARMUP_EXPORTS, startMs: spec.startMs - 3_600_000 };
  await post("/v1/logs", logExports(warm), logsRejected);
  await post("/v1/metrics", metricExports({ ...warm, startMs: warm.startMs + 1 }), pointsRejected);
  periods.length = 0;
  const before = await native?.turn();
  const logRecordsPerSecond = await post("/v1/logs", logBodies, logsRejected, "logs");
  const between = await native?.turn();
  const dataPointsPerSecond = await post("/v1/metrics", metricBodies, pointsRejected, "metrics");
  const after = await native?.turn();
  // The store's worst case: every point at a time of its own (half an hour before the timed
  // ones: none is a retry of another), so that no two fold into one row.
  const apartBodies = metricExports({ ...spec, startMs: spec.startMs - 1_800_000 }, 1);
  const apartPointsPerSecond = await post("/v1/metrics", apartBodies, pointsRejected, "metricsApart");
  return {
    logRecordsPerSecond: Math.round(logRecordsPerSecond),
    dataPointsPerSecond: Math.round(dataPointsPerSecond),
    apartDataPointsPerSecond: Math.round(apartPointsPerSecond),
    periods,
    cpu: cpu as OtlpIngest["cpu"],
    nativeCpu: native?.cpu() ?? null,
    nativeBeside:
      before !== undefined && between !== undefined && after !== undefined
        ? { logs: Math.round((before + between) / 2), metrics: Math.round((between + after) / 2) }
        : null,
  };
}

/**
 * OTLP/gRPC and TelemetryService.Ingest into the service, in turns (bench/grpc-ingest.ts): the
 * OTLP exports are of an hour of their own, so that none is a retry of those sent over HTTP.
 */
async function timeOtlpAndNativeOverGrpc(
  db: Kysely<Database>,
  orgId: string,
  urls: { publicUrl: string; internalUrl: string },
  nativeEvents: readonly IncomingEvent[],
): Promise<GrpcIngestTiming> {
  const { token } = await createServiceAccount(db, { name: "bench gRPC ingest", scopes: ["analytics.ingest"], orgId });
  const emails = (
    await db.selectFrom("users").select("email").where("org_id", "=", orgId).orderBy("id").limit(1000).execute()
  ).map((u) => u.email);
  // Each kind's timed exports and one more to warm up.
  const spec = {
    emails,
    exports: OTLP_EXPORTS + 1,
    itemsPerExport: OTLP_PER_EXPORT,
    startMs: Date.now() - 3 * 3_600_000,
  };
  return timeIngestOverGrpc({
    ...urls,
    token,
    concurrency: CONCURRENCY,
    nativeEvents,
    batch: BATCH,
    logs: logExports(spec).map((b) => fromBinary(ExportLogsServiceRequestSchema, b)),
    metrics: metricExports({ ...spec, startMs: spec.startMs + 1 }).map((b) =>
      fromBinary(ExportMetricsServiceRequestSchema, b),
    ),
    itemsPerExport: OTLP_PER_EXPORT,
  });
}

/** Ingests the events natively, BATCH a call, CONCURRENCY calls in flight; returns how many were stored. */
async function ingestInBatches(db: Kysely<Database>, events: readonly IncomingEvent[]): Promise<number> {
  let next = 0;
  let accepted = 0;
  const worker = async () => {
    while (next < events.length) {
      const batch = events.slice(next, (next += BATCH));
      const res = await ingestEvents(db, batch);
      if (res.rejected.length > 0) throw new Error(`unexpected rejection: ${JSON.stringify(res.rejected[0])}`);
      accepted += res.accepted;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return accepted;
}

/**
 * Native ingest timed in turns beside the OTLP ingest: each turn ingests the next third of
 * `events` and returns its events/s; cpu() is what the turns so far took per event (this process
 * and Postgres). Null without events (--reuse).
 */
interface NativeTurns {
  turn(): Promise<number>;
  cpu(): CpuPerItem;
}

function nativeTurns(db: Kysely<Database>, events: readonly IncomingEvent[]): NativeTurns | null {
  if (events.length < 3) return null;
  const third = Math.floor(events.length / 3);
  let next = 0;
  let stored = 0;
  let spent = NO_CPU_SPENT;
  return {
    async turn() {
      const turn = events.slice(next, (next += third));
      const window = await cpuWindow(hereAndPostgres);
      const started = performance.now();
      const accepted = await ingestInBatches(db, turn);
      const seconds = (performance.now() - started) / 1000;
      const used = await window();
      spent = addSpent(spent, used);
      stored += accepted;
      return accepted / seconds;
    },
    cpu: () => perItem(spent, stored),
  };
}

async function main() {
  const serverUrl = process.env.DATABASE_URL || process.env.TEST_DATABASE_URL || undefined;
  const logger = createLogger("warn", true);
  const database = args.reuse
    ? await openKeptDatabase(serverUrl, args.reuse, logger)
    : await createTestDatabase<Database>(migrations, { serverUrl, logger });
  log(`database: ${database.kind}${database.name ? ` (${database.name})` : ""}; ${cpus().length} CPUs`);
  try {
    const db = database.db;
    const today = dayOf(Date.now());
    const yesterday = addDays(today, -1);
    const days = eachDay(addDays(yesterday, -(DAYS - 1)), yesterday);

    let orgId: string;
    const beside: IncomingEvent[] = [];
    const overGrpc: IncomingEvent[] = [];
    let key: string;
    let ingested = 0;
    let ingestMs = 0;
    let generateMs = 0;
    // CPU of the ingest's timed periods: this process (validation, encoding), Postgres (every
    // process of the server: backends, WAL writer, checkpointer) and the machine's idle time.
    let ingestCpu = NO_CPU_SPENT;
    if (args.reuse) {
      ({ orgId, key } = await keptOrganization(db));
      log(`reusing ${args.reuse}: organization ${orgId}`);
    } else {
      orgId = (await createOrganization(db, { name: "Benchmark Org", plan: "enterprise" })).id;
      // Bulk users: 1,000 per statement.
      const users = Array.from({ length: USERS }, (_, i) => ({ id: newId(), email: `dev${i}@bench.example` }));
      for (let i = 0; i < users.length; i += 1000) {
        await db
          .insertInto("users")
          .values(
            users.slice(i, i + 1000).map((u, j) => ({
              id: u.id,
              org_id: orgId,
              email: u.email,
              role: i + j === 0 ? "owner" : "member",
              first_name: "Dev",
              last_name: String(i + j),
              metadata: "{}",
            })),
          )
          .execute();
      }
      ({ key } = await createApiKey(db, orgId, users[0]!.id));

      // Scale the generator to the target: count a sample's events at intensity 1.
      const sampleUsers = users.slice(0, Math.min(200, users.length));
      let sample = 0;
      for (const batch of generateTelemetry({
        orgId,
        users: sampleUsers,
        days: days.slice(0, 14),
        seed: SEED,
        idPrefix: "",
      }))
        sample += batch.length;
      const perUserDay = sample / (sampleUsers.length * Math.min(14, days.length));
      const intensity = Math.max(0.05, TARGET / (perUserDay * USERS * DAYS));
      log(
        `generator: ${perUserDay.toFixed(1)} events per user and day at intensity 1; using intensity ${intensity.toFixed(2)}`,
      );

      // Ingest: one day of events is generated (untimed), then ingested in batches (timed).
      const opts = { orgId, users, seed: SEED, intensity, idPrefix: args["without-ids"] ? "" : "bench" };
      for (const d of days) {
        let t = performance.now();
        const dayEvents: IncomingEvent[] = [];
        for (const userDay of generateTelemetry({ ...opts, days: [d] })) for (const e of userDay) dayEvents.push(e);
        generateMs += performance.now() - t;
        const window = await cpuWindow(hereAndPostgres);
        t = performance.now();
        ingested += await ingestInBatches(db, dayEvents);
        ingestMs += performance.now() - t;
        ingestCpu = addSpent(ingestCpu, await window());
        log(`  ${d}: ${dayEvents.length} events; total ${ingested} (${Math.round(ingested / (ingestMs / 1000))} ev/s)`);
      }
      // Events of the same days under new IDs, to time the native ingest beside the OTLP ingest
      // (timeOtlpIngest): an OTLP kind's worth before, between and after the two kinds.
      const wanted = 3 * OTLP_EXPORTS * OTLP_PER_EXPORT;
      const besideOpts = { ...opts, idPrefix: args["without-ids"] ? "" : "beside" };
      for (const d of days) {
        if (beside.length >= wanted) break;
        for (const userDay of generateTelemetry({ ...besideOpts, days: [d] })) for (const e of userDay) beside.push(e);
      }
      beside.length = Math.min(beside.length, wanted);
      // And again, for the native ingest over gRPC (timeIngestOverGrpc), a batch more to warm up.
      const grpcOpts = { ...opts, idPrefix: args["without-ids"] ? "" : "grpc" };
      for (const d of days) {
        if (overGrpc.length >= wanted + BATCH) break;
        for (const userDay of generateTelemetry({ ...grpcOpts, days: [d] })) for (const e of userDay) overGrpc.push(e);
      }
      overGrpc.length = Math.min(overGrpc.length, wanted + BATCH);
    }

    // Rollup: every day of the organization, as `agentplane rollup --from --to` does.
    const t = performance.now();
    const rolled = await rollupRange(db, { from: days[0]!, to: yesterday, orgId }, { through: yesterday });
    const rollupMs = performance.now() - t;
    log(
      `rollup (with the statistics refresh): ${rolled.events} events over ${rolled.days} days in ${(rollupMs / 1000).toFixed(1)} s`,
    );

    // Freshness: the last day as the schedule makes it queryable. Every earlier day is recorded as
    // swept, so the tick that runs at 00:05 UTC the next day (scheduler.ts) sweeps that day alone,
    // as it does each night; from midnight to queryable is the tick's minute plus its run time.
    await sql`delete from analytics_rollup_runs`.execute(db);
    await sql`insert into analytics_rollup_runs (day) values (${addDays(yesterday, -1)}::date)`.execute(db);
    const tickAt = Date.parse(`${today}T00:00:00Z`) + TICK_MINUTE * 60_000;
    const sweepStarted = performance.now();
    const sweep = await runTick(db, tickAt);
    const sweepMs = performance.now() - sweepStarted;
    if (sweep.days.join() !== yesterday)
      throw new Error(`the freshness tick swept ${sweep.days.join(", ")}, not ${yesterday}`);
    const freshnessSeconds = TICK_MINUTE * 60 + sweepMs / 1000;
    log(
      `freshness: the ${TICK_MINUTE}-past-midnight sweep of ${yesterday} (${sweep.events} events) took ${(sweepMs / 1000).toFixed(1)} s: queryable ${(freshnessSeconds / 60).toFixed(1)} minutes after midnight UTC`,
    );

    // Latency through the REST edge, of the service as it is deployed (startReadServer says how).
    const buildDir = await buildService(ROOT);
    const server = await startReadServer(buildDir, serverUrl, database.name ?? null, logger, database);
    log(`reads: ${server.description}`);
    const range = `startDate=${days[0]}&endDate=${yesterday}`;
    const latency: Record<string, { p50: number; p99: number; bytes: number }> = {};
    let otlp: OtlpIngest | undefined;
    let grpc: GrpcIngestTiming | undefined;
    let inflateMs = 0;
    try {
      const browser = "gzip, deflate, br";
      // /users walks its pages (each request sends the previous page's next_cursor), so every
      // page of the organization is timed, not one page again and again.
      for (const [name, path, acceptEncoding, pageCursor] of [
        [`/tokens (${DAYS} days), as text`, `/api/v1/analytics/tokens?${range}`, "identity", undefined],
        [`/tokens (${DAYS} days), compressed`, `/api/v1/analytics/tokens?${range}`, browser, undefined],
        [`/tokens (${DAYS} days), deflate only`, `/api/v1/analytics/tokens?${range}`, "deflate", undefined],
        [
          `/tokens?group_by=model (${DAYS} days)`,
          `/api/v1/analytics/tokens?${range}&group_by=model`,
          browser,
          undefined,
        ],
        [`/activity (${DAYS} days)`, `/api/v1/analytics/activity?${range}`, browser, undefined],
        [
          `/users?limit=100 (${DAYS} days), walking the pages`,
          `/api/v1/analytics/users?${range}&limit=100`,
          // The walk reads each page's next_cursor, so its answers come uncompressed.
          "identity",
          "cursor",
        ],
      ] as const) {
        // The first three warm up.
        const res = await timedGets(buildDir, {
          url: server.restUrl + path,
          headers: { authorization: `Bearer ${key}`, "accept-encoding": acceptEncoding },
          warmup: 3,
          count: REQUESTS,
          ...(pageCursor ? { pageCursor } : {}),
        });
        if (res.inflateMs !== null && acceptEncoding === browser) inflateMs = res.inflateMs;
        const times = res.times.sort((a, b) => a - b);
        latency[name] = { p50: percentile(times, 0.5), p99: percentile(times, 0.99), bytes: res.bytes };
        log(
          `${name}: p50 ${latency[name].p50.toFixed(1)} ms, p99 ${latency[name].p99.toFixed(1)} ms, ${res.bytes} bytes${res.encoding ? ` (${res.encoding})` : ""}${pageCursor ? ` (last page); ${res.pages} pages timed` : ""}`,
        );
      }
      otlp = await timeOtlpIngest(db, orgId, server.restUrl, server.pid, nativeTurns(db, beside));
      log(
        `OTLP ingest over HTTP (protobuf, ${OTLP_PER_EXPORT} items an export, ${CONCURRENCY} in flight): ${otlp.logRecordsPerSecond} log records/s, ${otlp.dataPointsPerSecond} data points/s (${otlp.apartDataPointsPerSecond} with every point at a time of its own)` +
          (otlp.nativeBeside
            ? `; the native ingest beside them: ${otlp.nativeBeside.logs} and ${otlp.nativeBeside.metrics} events/s`
            : ""),
      );
      if (overGrpc.length > 0) {
        grpc = await timeOtlpAndNativeOverGrpc(db, orgId, server.grpc, overGrpc);
        log(
          `over gRPC (${OTLP_PER_EXPORT} items a call, ${CONCURRENCY} in flight): OTLP ${grpc.logRecordsPerSecond} log records/s, ${grpc.dataPointsPerSecond} data points/s; TelemetryService.Ingest beside them ${grpc.nativeBeside.logs} and ${grpc.nativeBeside.metrics} events/s`,
        );
      }
    } finally {
      await server.stop();
    }
    if (server.profile && otlp)
      log(`CPU profile of the service during the OTLP ingest:\n${await server.profile(otlp.periods)}`);

    // Per event stored (when this run ingested: ingested > 0 wherever the micros are read).
    const ingestCpuPerEvent = perItem(ingestCpu, ingested);
    const result = {
      database: database.kind,
      cpus: cpus().length,
      users: USERS,
      days: DAYS,
      events: ingested,
      eventIds: !args["without-ids"],
      ingestEventsPerSecond: Math.round(ingested / (ingestMs / 1000)),
      ingestSeconds: +(ingestMs / 1000).toFixed(1),
      generateSeconds: +(generateMs / 1000).toFixed(1),
      // Per event stored: microseconds of CPU in this process and in Postgres; the machine's share idle.
      ingestCpuMicrosPerEvent:
        ingested > 0
          ? {
              node: ingestCpuPerEvent.micros.here!,
              postgres: ingestCpuPerEvent.micros.postgres!,
            }
          : null,
      ingestIdleShare: ingestCpu.totalMs > 0 ? ingestCpuPerEvent.idle : null,
      rollupEventsPerSecond: Math.round(rolled.events / (rollupMs / 1000)),
      rollupSeconds: +(rollupMs / 1000).toFixed(1),
      // The last day's nightly sweep, and midnight → queryable (the tick's minute included).
      lastDaySweepSeconds: +(sweepMs / 1000).toFixed(1),
      lastDayEvents: sweep.events,
      freshnessMinutes: +(freshnessSeconds / 60).toFixed(1),
      inflateMs: +inflateMs.toFixed(1),
      // OTLP through the service's REST port, beside the native ingest above (in process, no HTTP).
      otlpLogRecordsPerSecond: otlp?.logRecordsPerSecond ?? null,
      otlpDataPointsPerSecond: otlp?.dataPointsPerSecond ?? null,
      // Every point at a time of its own: the store folds none of them (ingest/usage-points.ts).
      otlpApartDataPointsPerSecond: otlp?.apartDataPointsPerSecond ?? null,
      // The native ingest (in process, as above) timed in turns around each OTLP kind.
      nativeBesideOtlp: otlp?.nativeBeside ?? null,
      // CPU per item of the OTLP ingest (the service, Postgres, this process as the client) and per
      // event of the native ingest beside it (this process, Postgres).
      otlpCpu: otlp?.cpu ?? null,
      nativeBesideCpu: otlp?.nativeCpu ?? null,
      // Both over gRPC into the service: OTLP/gRPC Export, and TelemetryService.Ingest in turns around each kind.
      overGrpc: grpc ?? null,
      latencyMs: Object.fromEntries(
        Object.entries(latency).map(([k, v]) => [
          k,
          { p50: +v.p50.toFixed(1), p99: +v.p99.toFixed(1), bytes: v.bytes },
        ]),
      ),
    };
    if (args.json) process.stdout.write(`${JSON.stringify(result)}\n`);
    else {
      process.stdout.write(
        `${[
          `events ingested:   ${ingested} (${USERS} users, ${DAYS} days, event ids ${result.eventIds ? "on" : "off"})`,
          `ingest:            ${result.ingestEventsPerSecond} events/s (${result.ingestSeconds} s; generating took another ${result.generateSeconds} s)`,
          ...(result.ingestCpuMicrosPerEvent
            ? [
                `ingest CPU:        ${result.ingestCpuMicrosPerEvent.node} µs/event here, ${result.ingestCpuMicrosPerEvent.postgres} µs/event in Postgres; machine idle ${Math.round((result.ingestIdleShare ?? NaN) * 100)}%`,
              ]
            : []),
          `rollup:            ${result.rollupEventsPerSecond} events/s (${result.rollupSeconds} s)`,
          ...(result.otlpLogRecordsPerSecond !== null
            ? [
                `OTLP ingest:       ${result.otlpLogRecordsPerSecond} log records/s, ${result.otlpDataPointsPerSecond} data points/s over HTTP` +
                  (ingested > 0
                    ? ` (${Math.round((100 * result.otlpLogRecordsPerSecond) / result.ingestEventsPerSecond)}% and ${Math.round((100 * (result.otlpDataPointsPerSecond ?? 0)) / result.ingestEventsPerSecond)}% of the native ingest's events/s)`
                    : ""),
                ...(result.otlpApartDataPointsPerSecond !== null
                  ? [
                      `                   ${result.otlpApartDataPointsPerSecond} data points/s with every point at a time of its own (none folded into another's row)` +
                        (ingested > 0
                          ? `: ${Math.round((100 * result.otlpApartDataPointsPerSecond) / result.ingestEventsPerSecond)}% of the native ingest's events/s`
                          : ""),
                    ]
                  : []),
                ...(result.otlpCpu
                  ? [
                      `OTLP CPU:          per log record: ${cpuText(result.otlpCpu.logs)}`,
                      `                   per data point: ${cpuText(result.otlpCpu.metrics)}`,
                      `                   per data point at a time of its own: ${cpuText(result.otlpCpu.metricsApart)}`,
                    ]
                  : []),
                ...(result.nativeBesideCpu ? [`native beside CPU: per event: ${cpuText(result.nativeBesideCpu)}`] : []),
                ...(result.nativeBesideOtlp
                  ? [
                      `OTLP vs native:    ${Math.round((100 * (result.otlpLogRecordsPerSecond ?? 0)) / result.nativeBesideOtlp.logs)}% and ${Math.round((100 * (result.otlpDataPointsPerSecond ?? 0)) / result.nativeBesideOtlp.metrics)}% of the native ingest timed in turns beside each (${result.nativeBesideOtlp.logs} and ${result.nativeBesideOtlp.metrics} events/s)`,
                    ]
                  : []),
              ]
            : []),
          ...(result.overGrpc
            ? [
                `both over gRPC:    OTLP ${result.overGrpc.logRecordsPerSecond} log records/s and ${result.overGrpc.dataPointsPerSecond} data points/s, ${Math.round((100 * result.overGrpc.logRecordsPerSecond) / result.overGrpc.nativeBeside.logs)}% and ${Math.round((100 * result.overGrpc.dataPointsPerSecond) / result.overGrpc.nativeBeside.metrics)}% of TelemetryService.Ingest's events/s timed in turns beside each (${result.overGrpc.nativeBeside.logs} and ${result.overGrpc.nativeBeside.metrics})`,
              ]
            : []),
          `freshness:         the last day (${result.lastDayEvents} events) queryable ${result.freshnessMinutes} min after midnight UTC (00:${String(TICK_MINUTE).padStart(2, "0")} tick + ${result.lastDaySweepSeconds} s sweep)`,
          ...Object.entries(result.latencyMs).map(
            ([k, v]) => `${(`${k}:`).padEnd(40)} p50 ${v.p50} ms, p99 ${v.p99} ms (${v.bytes} bytes)`,
          ),
          `decompressing the compressed /tokens:    ${result.inflateMs} ms (in the client, once)`,
        ].join("\n")}\n`,
      );
    }
  } finally {
    if (args.keep) log(`kept database ${database.name ?? "(in memory: gone)"}`);
    else await database.drop();
    if (args.keep) await database.close();
  }
}

await main();
