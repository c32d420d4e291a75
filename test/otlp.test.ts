// The OTLP receiver end to end (docs/otlp.md), driven by the OpenTelemetry JS SDK's own exporters
// configured the way Claude Code documents its telemetry (OTEL_EXPORTER_OTLP_ENDPOINT = our base
// URL, OTEL_EXPORTER_OTLP_HEADERS = "Authorization=Bearer <key>"): OTLP/HTTP protobuf, OTLP/HTTP
// JSON and OTLP/gRPC, cumulative and delta temporality, against a real server with its REST edge
// and public gRPC port. The rollup's answers (/tokens, /tools, /activity, /productivity, /users)
// are compared with the reference computation of test/analytics-reference.ts over the events the
// test itself expects from Claude Code's documented telemetry (its own reading of the mapping
// table, sharing no code with services/analytics/otlp). A retried export and a restarted
// receiver change nothing; bad payloads get OTLP's answers, never a 5xx.
import { gzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Attributes } from "@opentelemetry/api";
import { OTLPLogExporter as GrpcLogExporter } from "@opentelemetry/exporter-logs-otlp-grpc";
import { OTLPLogExporter as JsonLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { OTLPLogExporter as ProtoLogExporter } from "@opentelemetry/exporter-logs-otlp-proto";
import { OTLPMetricExporter as GrpcMetricExporter } from "@opentelemetry/exporter-metrics-otlp-grpc";
import { OTLPMetricExporter as JsonMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import { OTLPMetricExporter as ProtoMetricExporter } from "@opentelemetry/exporter-metrics-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  type LogRecordExporter,
  LoggerProvider,
  type ReadableLogRecord,
  SimpleLogRecordProcessor,
} from "@opentelemetry/sdk-logs";
import { MeterProvider, type PushMetricExporter, type ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { Code, createClient } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { StatusSchema } from "../gen/google/rpc/status_pb.js";
import {
  ExportLogsServiceRequestSchema,
  ExportLogsServiceResponseSchema,
  LogsService,
} from "../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import {
  ExportMetricsServiceRequestSchema,
  ExportMetricsServiceResponseSchema,
  MetricsService,
} from "../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import { TraceService } from "../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { AggregationTemporality } from "../gen/opentelemetry/proto/metrics/v1/metrics_pb.js";
import { MAX_DECODED_GRPC_BYTES, MAX_OTLP_BODY_BYTES } from "../services/analytics/otlp/wire.js";
import { removeModelPrice, setModelPrice } from "../services/analytics/rollup/days.js";
import { rollupRange } from "../services/analytics/rollup/rollup.js";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { createOrganization } from "../services/organization/queries.js";
import { createLogger } from "../services/platform/logger.js";
import { type RunningServer, startServer } from "../services/server.js";
import { firstDifference, type RawEvent, Reference } from "./analytics-reference.js";
import { createTestDatabase, type TestDatabase } from "./support/database.js";
import { bearer, createTestOrg, createTestServiceAccount, createTestUser, type TestUser } from "./support/fixtures.js";
import { grpcClient } from "./support/grpc.js";
import { createTestKv } from "./support/kv.js";
import { exportLogs, exportMetrics, ManualReader, withEnv } from "./support/otel-sdk.js";
import { testServerConfig } from "./support/server.js";

const DAY_MS = 86_400_000;
const REAL_NOW = Date.now();
const DAY = new Date(REAL_NOW).toISOString().slice(0, 10);

let database: TestDatabase<Database>;
let kv: Awaited<ReturnType<typeof createTestKv>>;
let server: RunningServer;
let orgId: string;
let owner: TestUser;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
let outsider: TestUser;
let otherOrgId: string;
let collectorToken: string;

/** Starts the server; again on the same ports (a restart the SDK's exporters reconnect to). */
async function start(previous?: RunningServer): Promise<RunningServer> {
  const port = (url: string | undefined) => new URL(url!).port;
  const config = testServerConfig(
    previous
      ? {
          PORT: port(previous.restUrl),
          GRPC_PORT: port(previous.grpcUrl),
          INTERNAL_GRPC_PORT: port(previous.internalGrpcUrl),
        }
      : {},
  );
  return startServer(config, createLogger(config.logLevel), { database, kv, workers: false });
}

/** What the test expects stored, in the reference's snake_case shape. */
const expected: RawEvent[] = [];
/** Rows stored that the rollup does not count (metric usage of sessions with api_request events). */
let storedNotCounted = 0;
const storedWanted = () => expected.length + storedNotCounted;
const emails = new Map<string, string>();

/** Claude Code's standard attributes on every data point and event. */
function standard(user: TestUser, sessionId: string, terminal = "vscode"): Attributes {
  return {
    "session.id": sessionId,
    "user.email": user.email,
    "user.id": `device-${user.userId.slice(0, 8)}`,
    "user.account_uuid": `acct-${user.userId.slice(0, 8)}`,
    "terminal.type": terminal,
  };
}

const clientOfTerminal = (t: string) => (t === "non-interactive" ? "non-interactive-cli" : "terminal-ui");

function expect1(user: TestUser, sessionId: string, terminal: string, fields: RawEvent): void {
  expected.push({
    user_id: user.userId,
    session_id: sessionId,
    client: clientOfTerminal(terminal),
    time: new Date(REAL_NOW).toISOString(),
    ...fields,
  });
}

/** A Claude Code process: its meter and logger, exporting through one OTLP protocol. */
class ClaudeCode {
  readonly reader: ManualReader;
  readonly meters: MeterProvider;
  readonly logs: LoggerProvider;
  readonly batches: ReadableLogRecord[][] = [];
  private pending: ReadableLogRecord[] = [];
  private sequence = 0;

  constructor(
    readonly metricExporter: PushMetricExporter,
    readonly logExporter: LogRecordExporter,
  ) {
    const resource = resourceFromAttributes({ "service.name": "claude-code", "service.version": "2.1.0" });
    // The exporter's own temporality: what the environment variable chose.
    this.reader = new ManualReader((t) => metricExporter.selectAggregationTemporality!(t));
    this.meters = new MeterProvider({ resource, readers: [this.reader] });
    const capture: LogRecordExporter = {
      export: (records, done) => {
        this.pending.push(...records);
        done({ code: 0 });
      },
      shutdown: async () => {},
      forceFlush: async () => {},
    };
    this.logs = new LoggerProvider({ resource, processors: [new SimpleLogRecordProcessor({ exporter: capture })] });
  }

  counter(name: string) {
    return this.meters.getMeter("com.anthropic.claude_code").createCounter(name);
  }

  event(name: string, attributes: Attributes): void {
    this.logs.getLogger("com.anthropic.claude_code.events").emit({
      body: `claude_code.${name}`,
      timestamp: REAL_NOW,
      // event.sequence (Claude Code numbers its events): two equal prompts are two records.
      attributes: {
        "event.name": name,
        "event.timestamp": new Date(REAL_NOW).toISOString(),
        "event.sequence": this.sequence++,
        ...attributes,
      },
    });
  }

  /** One collection of the metrics, exported; returns it for a retry. */
  async flushMetrics(): Promise<ResourceMetrics> {
    const { resourceMetrics, errors } = await this.reader.collect();
    expect(errors).toEqual([]);
    await exportMetrics(this.metricExporter, resourceMetrics);
    return resourceMetrics;
  }

  async flushLogs(): Promise<ReadableLogRecord[]> {
    await this.logs.forceFlush();
    const batch = this.pending;
    this.pending = [];
    if (batch.length > 0) await exportLogs(this.logExporter, batch);
    this.batches.push(batch);
    return batch;
  }
}

function claudeCode(
  protocol: "http/protobuf" | "http/json" | "grpc",
  token: string,
  temporality: "cumulative" | "delta",
) {
  const env = {
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_EXPORTER_OTLP_ENDPOINT: protocol === "grpc" ? server.grpcUrl : server.restUrl!,
    OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer ${token}`,
    OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: temporality,
  };
  return withEnv(env, () => {
    switch (protocol) {
      case "http/protobuf":
        return new ClaudeCode(new ProtoMetricExporter(), new ProtoLogExporter());
      case "http/json":
        return new ClaudeCode(new JsonMetricExporter(), new JsonLogExporter());
      case "grpc":
        return new ClaudeCode(new GrpcMetricExporter(), new GrpcLogExporter());
    }
  });
}

/**
 * One session's worth of Claude Code telemetry from `user` through `cc`, with the events the
 * mapping table says it becomes. `logUsage`: tokens and cost also as api_request events (the
 * rollup then counts those, not the metric's).
 */
function session(cc: ClaudeCode, user: TestUser, sessionId: string, terminal: string, logUsage: boolean, scale = 1) {
  const attrs = standard(user, sessionId, terminal);
  const model = scale === 1 ? "claude-sonnet-4-5" : "claude-opus-4-1";
  cc.counter("claude_code.session.count").add(1, attrs);
  expect1(user, sessionId, terminal, { type: "session_start", autonomy_mode: "manual" });
  const tokens = { input: 1000 * scale, output: 300 * scale, cacheRead: 5000 * scale, cacheCreation: 700 * scale };
  for (const [type, n] of Object.entries(tokens))
    cc.counter("claude_code.token.usage").add(n, { ...attrs, type, model });
  cc.counter("claude_code.cost.usage").add(0.25 * scale, { ...attrs, model });
  if (!logUsage) {
    const zero = {
      model_id: model,
      model_tier: "standard",
      input_tokens: 0,
      output_tokens: 0,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
    };
    // The four token points and the cost point of one collection (one time, one model) are
    // stored as one row of the four counts and the cost (ingest/usage-points.ts): the cost the
    // client reported for those tokens.
    expect1(user, sessionId, terminal, {
      type: "model_usage",
      ...zero,
      input_tokens: tokens.input,
      output_tokens: tokens.output,
      cache_read_tokens: tokens.cacheRead,
      cache_write_tokens: tokens.cacheCreation,
      cost_usd: 0.25 * scale,
    });
  } else {
    // Two api_request events carrying the same totals; the metric's copy (one row: the token
    // and cost points folded) is stored and not counted by the rollup.
    storedNotCounted += 1;
    for (const fifths of [2, 3]) {
      cc.event("api_request", {
        ...attrs,
        model,
        cost_usd: String((0.25 * scale * fifths) / 5),
        duration_ms: "1200",
        input_tokens: String((tokens.input * fifths) / 5),
        output_tokens: String((tokens.output * fifths) / 5),
        cache_read_tokens: String((tokens.cacheRead * fifths) / 5),
        cache_creation_tokens: String((tokens.cacheCreation * fifths) / 5),
      });
      expect1(user, sessionId, terminal, {
        type: "model_usage",
        model_id: model,
        model_tier: "standard",
        input_tokens: (tokens.input * fifths) / 5,
        output_tokens: (tokens.output * fifths) / 5,
        cache_read_tokens: (tokens.cacheRead * fifths) / 5,
        cache_write_tokens: (tokens.cacheCreation * fifths) / 5,
        cost_usd: (0.25 * scale * fifths) / 5,
      });
    }
  }
  cc.counter("claude_code.lines_of_code.count").add(40 * scale, { ...attrs, type: "added" });
  cc.counter("claude_code.lines_of_code.count").add(12 * scale, { ...attrs, type: "removed" });
  expect1(user, sessionId, terminal, { type: "lines_changed", lines_added: 40 * scale, lines_removed: 0 });
  expect1(user, sessionId, terminal, { type: "lines_changed", lines_added: 0, lines_removed: 12 * scale });
  cc.counter("claude_code.commit.count").add(2, attrs);
  expect1(user, sessionId, terminal, { type: "git_commit" });
  expect1(user, sessionId, terminal, { type: "git_commit" });
  cc.counter("claude_code.pull_request.count").add(1, attrs);
  expect1(user, sessionId, terminal, { type: "pr_created" });
  cc.counter("claude_code.code_edit_tool.decision").add(3, {
    ...attrs,
    decision: "accept",
    tool_name: "Edit",
    language: "TypeScript",
  });
  cc.counter("claude_code.code_edit_tool.decision").add(1, {
    ...attrs,
    decision: "reject",
    tool_name: "Write",
    language: "Python",
  });
  for (let i = 0; i < 3; i++)
    expect1(user, sessionId, terminal, {
      type: "edit_decision",
      decision: "accept",
      tool: "Edit",
      language: "TypeScript",
    });
  expect1(user, sessionId, terminal, { type: "edit_decision", decision: "reject", tool: "Write", language: "Python" });
  cc.counter("claude_code.active_time.total").add(321.5, { ...attrs, type: "cli" });
  cc.counter("claude_code.brand_new.metric").add(5, attrs);
  for (let i = 0; i < 2; i++) {
    cc.event("user_prompt", { ...attrs, prompt_length: "42" });
    expect1(user, sessionId, terminal, { type: "message", role: "user" });
  }
  for (const [tool, source] of [
    ["Read", "config"],
    ["Edit", "user_temporary"],
    ["mcp__github__create_pull_request", "user_permanent"],
  ] as const) {
    cc.event("tool_result", {
      ...attrs,
      tool_name: tool,
      success: "true",
      duration_ms: "30",
      decision: "accept",
      source,
    });
    expect1(user, sessionId, terminal, {
      type: "tool_call",
      tool,
      autonomy_level: source === "config" ? "auto-high" : "manual",
      ...(tool.startsWith("mcp__") ? { mcp_server: "github" } : {}),
    });
    cc.event("tool_decision", { ...attrs, tool_name: tool, decision: "accept", source });
  }
  cc.event("some_future_event", attrs);
}

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const micro = (usd: number) => Math.round(usd * 1e6) / 1e6;

/** /code of one day from the expected events (docs/analytics.md's definitions). */
function codeOf(day: string) {
  const code = expected.filter((e) => e.type === "lines_changed" || e.type === "edit_decision");
  const counts = (events: RawEvent[]) => ({
    lines_added: events.reduce((n, e) => n + Number(e.lines_added ?? 0), 0),
    lines_removed: events.reduce((n, e) => n + Number(e.lines_removed ?? 0), 0),
    edits_accepted: events.filter((e) => e.decision === "accept").length,
    edits_rejected: events.filter((e) => e.decision === "reject").length,
  });
  const group = (key: (e: RawEvent) => string) => {
    const groups = new Map<string, RawEvent[]>();
    for (const e of code) groups.set(key(e), [...(groups.get(key(e)) ?? []), e]);
    return [...groups].sort(([a], [b]) => byteOrder(a, b));
  };
  const all = counts(code);
  const decided = all.edits_accepted + all.edits_rejected;
  return [
    {
      date: day,
      ...all,
      edit_acceptance_rate: decided === 0 ? 0 : all.edits_accepted / decided,
      by_language: group((e) => String(e.language ?? "")).map(([language, events]) => ({
        language,
        ...counts(events),
      })),
      by_user: group((e) => String(e.user_id)).map(([user_id, events]) => ({
        user_id,
        user_email: emails.get(user_id) ?? "",
        ...counts(events),
      })),
    },
  ];
}

/** /costs of one day: reported costs only (no price is set), the rest of the tokens unpriced. */
function costsOf(day: string) {
  const usage = expected.filter((e) => e.type === "model_usage");
  const tokens = (e: RawEvent) =>
    Number(e.input_tokens) + Number(e.output_tokens) + Number(e.cache_read_tokens) + Number(e.cache_write_tokens);
  const sums = (events: RawEvent[]) => {
    const reported = events.reduce((n, e) => n + Number(e.cost_usd ?? 0), 0);
    return {
      cost_usd: micro(reported),
      reported_cost_usd: micro(reported),
      unpriced_tokens: events.filter((e) => e.cost_usd === undefined).reduce((n, e) => n + tokens(e), 0),
    };
  };
  const group = (key: (e: RawEvent) => string) => {
    const groups = new Map<string, RawEvent[]>();
    for (const e of usage) groups.set(key(e), [...(groups.get(key(e)) ?? []), e]);
    return [...groups].sort(([a], [b]) => byteOrder(a, b));
  };
  return [
    {
      date: day,
      ...sums(usage),
      by_model: group((e) => String(e.model_id)).map(([model_id, events]) => ({ model_id, ...sums(events) })),
      by_user: group((e) => String(e.user_id)).map(([user_id, events]) => ({
        user_id,
        user_email: emails.get(user_id) ?? "",
        ...sums(events),
      })),
    },
  ];
}

async function rollupAndRead(path: string) {
  // rollupRange itself: TelemetryService.Rollup rolls up finished days only, and DAY is today.
  await rollupRange(server.platform.db, { from: DAY, to: DAY, orgId }, { through: DAY });
  const res = await fetch(
    `${server.restUrl}/api/v1/analytics${path}${path.includes("?") ? "&" : "?"}startDate=${DAY}&endDate=${DAY}`,
    {
      headers: { authorization: `Bearer ${owner.key}` },
    },
  );
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: unknown }).data;
}

function expectSame(actual: unknown, wanted: unknown) {
  const diff = firstDifference(actual, wanted);
  expect(diff, diff).toBeUndefined();
}

/** Stored rows by type, and what the test expects stored, by type: the first check, as it tells most. */
async function expectStoredTypes(): Promise<void> {
  const rows = await server.platform.db
    .selectFrom("analytics_events")
    .select(["type", "source", (eb) => eb.fn.countAll<string>().as("n")])
    .where("org_id", "=", orgId)
    .groupBy(["type", "source"])
    .execute();
  const actual: Record<string, number> = {};
  for (const r of rows) actual[r.type] = (actual[r.type] ?? 0) + Number(r.n);
  const wanted: Record<string, number> = {};
  for (const e of expected) wanted[String(e.type)] = (wanted[String(e.type)] ?? 0) + 1;
  wanted.model_usage = (wanted.model_usage ?? 0) + storedNotCounted;
  expect(actual).toEqual(wanted);
}

async function storedCount(): Promise<number> {
  const row = await server.platform.db
    .selectFrom("analytics_events")
    .select((eb) => eb.fn.countAll<string>().as("n"))
    .where("org_id", "=", orgId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

beforeAll(async () => {
  // A clock the test can move (Date only, advancing with real time), installed before the server
  // starts so that its services read it: the rollup test moves it a day ahead.
  vi.useFakeTimers({ toFake: ["Date"], shouldAdvanceTime: true });
  database = await createTestDatabase<Database>(migrations);
  kv = await createTestKv();
  server = await start();
  const db = server.platform.db;
  orgId = await createTestOrg(db, "OTLP");
  owner = await createTestUser(db, orgId, "owner");
  alice = await createTestUser(db, orgId, "member");
  bob = await createTestUser(db, orgId, "member");
  carol = await createTestUser(db, orgId, "member");
  otherOrgId = await createTestOrg(db, "OTLP other");
  outsider = await createTestUser(db, otherOrgId, "member");
  collectorToken = await createTestServiceAccount(db, { orgId, scopes: ["analytics.ingest"] });
  for (const u of [owner, alice, bob, carol]) emails.set(u.userId, u.email);
}, 60_000);

afterAll(async () => {
  vi.useRealTimers();
  await server?.stop();
  await kv?.close();
  await database?.drop();
});

describe("Claude Code's telemetry through the SDK's exporters", () => {
  let aliceCc: ClaudeCode;
  let carolCc: ClaudeCode;
  let retryMetrics: ResourceMetrics;

  it("OTLP/HTTP protobuf, cumulative, a user's API key: stored once, a retried export adds nothing", async () => {
    aliceCc = claudeCode("http/protobuf", alice.key, "cumulative");
    session(aliceCc, alice, "alice-1", "vscode", true);
    await aliceCc.flushMetrics();
    await aliceCc.flushLogs();
    // The next collection of the same cumulative counters: only the new increments count.
    session(aliceCc, alice, "alice-2", "non-interactive", false, 2);
    retryMetrics = await aliceCc.flushMetrics();
    const logs = await aliceCc.flushLogs();
    await expectStoredTypes();
    const count = await storedCount();
    expect(count).toBe(storedWanted());
    // The exporter sends the very same batches again (what a retry after a lost answer does).
    await exportMetrics(aliceCc.metricExporter, retryMetrics);
    await exportLogs(aliceCc.logExporter, logs);
    expect(await storedCount()).toBe(count);
  });

  it("OTLP/HTTP JSON, delta, an organization's service account attributing by user.email", async () => {
    const cc = claudeCode("http/json", collectorToken, "delta");
    session(cc, bob, "bob-1", "iTerm.app", false);
    await cc.flushMetrics();
    await cc.flushLogs();
    session(cc, bob, "bob-1", "iTerm.app", false);
    const again = await cc.flushMetrics();
    await cc.flushLogs();
    await expectStoredTypes();
    const count = await storedCount();
    expect(count).toBe(storedWanted());
    await exportMetrics(cc.metricExporter, again);
    expect(await storedCount()).toBe(count);
  });

  it("OTLP/gRPC on the public gRPC port, cumulative", async () => {
    carolCc = claudeCode("grpc", carol.key, "cumulative");
    session(carolCc, carol, "carol-1", "tmux", true, 3);
    await carolCc.flushMetrics();
    await carolCc.flushLogs();
    await expectStoredTypes();
  });

  it("a restarted receiver goes on from the stored last values: the next cumulative export adds only what is new", async () => {
    await server.stop();
    server = await start(server);
    // The same process (its cumulative counters since their start) exports again after the restart.
    for (const cc of [aliceCc, carolCc]) {
      await exportMetrics(cc.metricExporter, await cc.reader.collect().then((r) => r.resourceMetrics));
    }
    expect(await storedCount()).toBe(storedWanted());
    session(carolCc, carol, "carol-2", "vscode", false);
    await carolCc.flushMetrics();
    await carolCc.flushLogs();
    await expectStoredTypes();
  });

  it("the rollup's /tokens, /tools, /activity, /productivity, /users, /code and /costs equal the reference's", async () => {
    // From here on the clock says tomorrow: today's exports are "yesterday" to the analytics
    // endpoints, which never answer for today. (Not earlier: the SDK stamps data points with
    // Date.now, and the receiver checks them against it.)
    vi.setSystemTime(Date.now() + DAY_MS);
    const ref = new Reference(expected, emails);
    const tokens = ref.tokens(DAY, DAY);
    // Not a comparison of two empty days: three users' usage, from logs and from metrics.
    expect(tokens[0]!.by_user).toHaveLength(3);
    expect(tokens[0]!.input_tokens).toBeGreaterThan(0);
    expectSame(await rollupAndRead("/tokens"), tokens);
    expectSame(await rollupAndRead("/tools"), ref.tools(DAY, DAY));
    expectSame(await rollupAndRead("/activity"), ref.activity(DAY, DAY));
    expectSame(await rollupAndRead("/productivity"), ref.productivity(DAY, DAY));
    expectSame(await rollupAndRead("/users"), ref.users(DAY, DAY));
    // /code and /costs (docs/analytics.md), computed here from the same expected events.
    const code = codeOf(DAY);
    expect(code[0]).toMatchObject({
      lines_added: 40 * 9,
      lines_removed: 12 * 9,
      edits_accepted: 18,
      edits_rejected: 6,
    });
    expectSame(await rollupAndRead("/code"), code);
    const costs = costsOf(DAY);
    // Reported: every metric session's cost.usage and the api_request sessions' own (the metric
    // copy of alice-1's and carol-1's does not count). Every session reported its tokens' cost,
    // the metric sessions by cost.usage beside token.usage: no token is unpriced...
    expect(costs[0]!.cost_usd).toBe(micro(0.25 * 5 + 0.25 * 4));
    expect(costs[0]!.unpriced_tokens).toBe(0);
    expectSame(await rollupAndRead("/costs"), costs);
    // ... and none is priced on top of its reported cost once the models have prices.
    const models = ["claude-sonnet-4-5", "claude-opus-4-1"];
    for (const model_id of models)
      await setModelPrice(server.platform.db, {
        model_id,
        input_per_million: 3,
        output_per_million: 15,
        cache_read_per_million: 0.3,
        cache_write_per_million: 3.75,
      });
    try {
      expectSame(await rollupAndRead("/costs"), costs);
    } finally {
      for (const model of models) await removeModelPrice(server.platform.db, model);
    }
  });

  it("lines, edit decisions and client-reported cost are stored as the table says", async () => {
    const rows = await server.platform.db
      .selectFrom("analytics_events")
      .select((eb) => [
        eb.fn.sum<string>("lines_added").as("added"),
        eb.fn.sum<string>("lines_removed").as("removed"),
        eb.fn.count<string>("decision").filterWhere("decision", "=", "accept").as("accepted"),
        eb.fn.count<string>("decision").filterWhere("decision", "=", "reject").as("rejected"),
      ])
      .where("org_id", "=", orgId)
      .executeTakeFirstOrThrow();
    // Sessions at scale 1 (alice-1, bob-1 twice, carol-2), 2 (alice-2) and 3 (carol-1): 9 units.
    expect(Number(rows.added)).toBe(40 * 9);
    expect(Number(rows.removed)).toBe(12 * 9);
    expect(Number(rows.accepted)).toBe(3 * 6);
    expect(Number(rows.rejected)).toBe(1 * 6);
    const cost = await server.platform.db
      .selectFrom("analytics_events")
      .select(["source", (eb) => eb.fn.sum<number>("cost_usd").as("usd")])
      .where("org_id", "=", orgId)
      .where("type", "=", "model_usage")
      .groupBy("source")
      .orderBy("source")
      .execute();
    // Metrics: every session's cost.usage (9 units); logs: alice-1's (1) and carol-1's (3).
    expect(cost.map((c) => [c.source, Math.round(Number(c.usd) * 1000) / 1000])).toEqual([
      ["otlp_log", 0.25 * 4],
      ["otlp_metric", 0.25 * 9],
    ]);
  });
});

describe("answers as the OTLP specification says", () => {
  const post = (
    path: string,
    key: string,
    contentType: string,
    body: Uint8Array | string,
    headers: Record<string, string> = {},
  ) =>
    fetch(`${server.restUrl}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": contentType, ...headers },
      body,
    });

  function metricsRequest(points: number, attrs: Record<string, string>, name = "claude_code.commit.count") {
    const nowNano = BigInt(REAL_NOW) * 1_000_000n;
    return create(ExportMetricsServiceRequestSchema, {
      resourceMetrics: [
        {
          scopeMetrics: [
            {
              metrics: [
                {
                  name,
                  data: {
                    case: "sum",
                    value: {
                      aggregationTemporality: AggregationTemporality.DELTA,
                      isMonotonic: true,
                      dataPoints: Array.from({ length: points }, (_, i) => ({
                        startTimeUnixNano: nowNano - 1000n,
                        timeUnixNano: nowNano + BigInt(i),
                        value: { case: "asInt" as const, value: 1n },
                        attributes: Object.entries(attrs).map(([key, v]) => ({
                          key,
                          value: { value: { case: "stringValue" as const, value: v } },
                        })),
                      })),
                    },
                  },
                },
              ],
            },
          ],
        },
      ],
    });
  }

  it("cumulative sums: increases counted, a retry nothing, a new start time starts over", async () => {
    const nano = BigInt(REAL_NOW) * 1_000_000n;
    const commits = async () => {
      const row = await server.platform.db
        .selectFrom("analytics_events")
        .select((eb) => eb.fn.countAll<string>().as("n"))
        .where("org_id", "=", orgId)
        .where("session_id", "=", "reset-1")
        .executeTakeFirstOrThrow();
      return Number(row.n);
    };
    const send = async (start: bigint, time: bigint, value: bigint) => {
      const req = metricsRequest(1, { "session.id": "reset-1" });
      const sum = req.resourceMetrics[0]!.scopeMetrics[0]!.metrics[0]!.data.value as {
        aggregationTemporality: number;
        dataPoints: { startTimeUnixNano: bigint; timeUnixNano: bigint; value: unknown }[];
      };
      sum.aggregationTemporality = AggregationTemporality.CUMULATIVE;
      sum.dataPoints[0]!.startTimeUnixNano = start;
      sum.dataPoints[0]!.timeUnixNano = time;
      sum.dataPoints[0]!.value = { case: "asInt", value };
      const res = await post(
        "/v1/metrics",
        alice.key,
        "application/x-protobuf",
        toBinary(ExportMetricsServiceRequestSchema, req),
      );
      expect(res.status).toBe(200);
      return commits();
    };
    const s1 = nano - 60_000_000_000n;
    expect(await send(s1, nano - 30_000_000_000n, 3n)).toBe(3);
    expect(await send(s1, nano - 20_000_000_000n, 5n)).toBe(5);
    expect(await send(s1, nano - 20_000_000_000n, 5n)).toBe(5); // the same point again
    expect(await send(s1, nano - 25_000_000_000n, 4n)).toBe(5); // an older one, late
    const s2 = nano - 10_000_000_000n; // the process restarted: its counter starts over
    expect(await send(s2, nano - 5_000_000_000n, 1n)).toBe(6);
    expect(await send(s1, nano - 20_000_000_000n, 5n)).toBe(6); // a retry from before the restart
    expect(await send(s2, nano, 4n)).toBe(9);
  });

  it("gzip bodies, protobuf and JSON, are taken; the answer is in the request's encoding", async () => {
    const before = await storedCount();
    const proto = toBinary(ExportMetricsServiceRequestSchema, metricsRequest(1, { "session.id": "gz-1" }));
    const res = await post("/v1/metrics", alice.key, "application/x-protobuf", gzipSync(proto), {
      "content-encoding": "gzip",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-protobuf");
    const answer = fromBinary(ExportMetricsServiceResponseSchema, new Uint8Array(await res.arrayBuffer()));
    expect(answer.partialSuccess?.rejectedDataPoints ?? 0n).toBe(0n);
    const json = JSON.stringify({
      resourceLogs: [
        {
          scopeLogs: [
            {
              logRecords: [
                {
                  timeUnixNano: String(BigInt(REAL_NOW) * 1_000_000n),
                  traceId: "5b8efff798038103d269b633813fc60c",
                  spanId: "eee19b7ec3c1b174",
                  body: { stringValue: "claude_code.user_prompt" },
                  attributes: [{ key: "session.id", value: { stringValue: "gz-2" } }],
                },
              ],
            },
          ],
        },
      ],
    });
    const res2 = await post("/v1/logs", alice.key, "application/json", gzipSync(json), { "content-encoding": "gzip" });
    expect(res2.status).toBe(200);
    expect(res2.headers.get("content-type")).toBe("application/json");
    expect(await res2.json()).toEqual({ partialSuccess: {} });
    expect(await storedCount()).toBe(before + 2);
  });

  it("a user.email naming someone else, or another agentplane organization.id, is rejected and counted", async () => {
    const before = await storedCount();
    const req = metricsRequest(2, { "session.id": "x", "user.email": bob.email });
    req.resourceMetrics[0]!.scopeMetrics[0]!.metrics.push(
      metricsRequest(3, { "session.id": "y", "organization.id": otherOrgId }).resourceMetrics[0]!.scopeMetrics[0]!
        .metrics[0]!,
    );
    const res = await post(
      "/v1/metrics",
      alice.key,
      "application/x-protobuf",
      toBinary(ExportMetricsServiceRequestSchema, req),
    );
    expect(res.status).toBe(200);
    const answer = fromBinary(ExportMetricsServiceResponseSchema, new Uint8Array(await res.arrayBuffer()));
    expect(answer.partialSuccess?.rejectedDataPoints).toBe(5n);
    expect(answer.partialSuccess?.errorMessage).toContain("is not the API key's user");
    expect(answer.partialSuccess?.errorMessage).toContain("is another organization than the credential's");
    // A service account: an email of nobody in the organization (an outsider's) is rejected too.
    const res2 = await post(
      "/v1/metrics",
      collectorToken,
      "application/x-protobuf",
      toBinary(ExportMetricsServiceRequestSchema, metricsRequest(4, { "user.email": outsider.email })),
    );
    const answer2 = fromBinary(ExportMetricsServiceResponseSchema, new Uint8Array(await res2.arrayBuffer()));
    expect(answer2.partialSuccess?.rejectedDataPoints).toBe(4n);
    expect(await storedCount()).toBe(before);
    // An organization.id that is no agentplane organization (Claude Code sends its own account's
    // organization UUID there) is not ours to judge: the points are kept.
    const res3 = await post(
      "/v1/metrics",
      alice.key,
      "application/x-protobuf",
      toBinary(
        ExportMetricsServiceRequestSchema,
        metricsRequest(2, { "session.id": "z", "organization.id": "3f6c2a8e-1b7d-4c55-9e0a-6d2f1c4b8a90" }),
      ),
    );
    const answer3 = fromBinary(ExportMetricsServiceResponseSchema, new Uint8Array(await res3.arrayBuffer()));
    expect(answer3.partialSuccess?.rejectedDataPoints ?? 0n).toBe(0n);
    expect(await storedCount()).toBeGreaterThan(before);
  });

  it("unknown metric and event names are ignored and counted, not errors", async () => {
    const res = await post(
      "/v1/metrics",
      alice.key,
      "application/json",
      JSON.stringify({
        resourceMetrics: [
          {
            scopeMetrics: [
              {
                metrics: [
                  {
                    name: "other_tool.thing.count",
                    sum: {
                      aggregationTemporality: 1,
                      dataPoints: [{ asInt: "3", timeUnixNano: String(BigInt(REAL_NOW) * 1_000_000n) }],
                    },
                  },
                ],
              },
            ],
          },
        ],
      }),
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as { partialSuccess: { rejectedDataPoints?: string; errorMessage: string } };
    expect(body.partialSuccess.rejectedDataPoints ?? "0").toBe("0");
    expect(body.partialSuccess.errorMessage).toContain("other_tool.thing.count (1)");
  });

  it("traces are accepted and not stored, and said so", async () => {
    const res = await post("/v1/traces", alice.key, "application/json", "{}");
    expect(res.status).toBe(200);
    expect(((await res.json()) as { partialSuccess: { errorMessage: string } }).partialSuccess.errorMessage).toMatch(
      /not stored/,
    );
    const grpc = grpcClient(TraceService, server.grpcUrl, bearer(alice.key));
    const answer = await grpc.call(TraceService.method.export, {});
    expect(answer.partialSuccess?.errorMessage).toMatch(/not stored/);
    grpc.close();
  });

  it.each([
    [
      "truncated protobuf",
      "application/x-protobuf",
      () => toBinary(ExportMetricsServiceRequestSchema, metricsRequest(3, { "session.id": "t" })).slice(0, 20),
    ],
    ["JSON of the wrong types", "application/json", () => JSON.stringify({ resourceMetrics: "many" })],
    ["not JSON", "application/json", () => "{resourceMetrics: ["],
    [
      "a bad hex trace ID",
      "application/json",
      () => JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ traceId: "zz" }] }] }] }),
    ],
    ["a broken gzip", "application/x-protobuf", () => Buffer.from([0x1f, 0x8b, 8, 0, 0, 0])],
  ])("%s: 400 with a google.rpc.Status in the request's encoding", async (_name, contentType, make) => {
    const path = contentType === "application/json" && _name.includes("hex") ? "/v1/logs" : "/v1/metrics";
    const res = await post(path, alice.key, contentType, make());
    expect(res.status).toBe(400);
    const bytes = new Uint8Array(await res.arrayBuffer());
    const status =
      contentType === "application/json"
        ? (JSON.parse(new TextDecoder().decode(bytes)) as { message: string })
        : fromBinary(StatusSchema, bytes);
    expect(status.message).not.toBe("");
  });

  it("another content type is a 415; no credential a 401; a service account without the scope a 403: each a google.rpc.Status in the request's encoding", async () => {
    const res = await post("/v1/logs", alice.key, "text/plain", "hello");
    expect(res.status).toBe(415);
    expect(res.headers.get("content-type")).toBe("application/x-protobuf");
    expect(fromBinary(StatusSchema, new Uint8Array(await res.arrayBuffer())).message).toContain("text/plain");
    const anon = await fetch(`${server.restUrl}/v1/logs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(anon.status).toBe(401);
    expect(anon.headers.get("content-type")).toBe("application/json");
    expect(await anon.json()).toEqual({ message: expect.stringContaining("Authorization") });
    const noScope = await createTestServiceAccount(server.platform.db, { orgId, scopes: ["analytics.rollup"] });
    const denied = await post("/v1/metrics", noScope, "application/x-protobuf", new Uint8Array());
    expect(denied.status).toBe(403);
    expect(denied.headers.get("content-type")).toBe("application/x-protobuf");
    expect(fromBinary(StatusSchema, new Uint8Array(await denied.arrayBuffer())).message).toContain("analytics.ingest");
    const unbound = await createTestServiceAccount(server.platform.db, { scopes: ["analytics.ingest"] });
    const notBound = await post("/v1/logs", unbound, "application/json", "{}");
    expect(notBound.status).toBe(403);
    expect(((await notBound.json()) as { message: string }).message).toContain("bound to an organization");
  });

  it("huge attribute values: the records are rejected and counted, never a 5xx", async () => {
    const huge = "x".repeat(900_000); // four of them: within the 4 MiB body limit
    const req = metricsRequest(2, { "session.id": huge, model: huge });
    const res = await post(
      "/v1/metrics",
      alice.key,
      "application/x-protobuf",
      toBinary(ExportMetricsServiceRequestSchema, req),
    );
    expect(res.status).toBe(200);
    const answer = fromBinary(ExportMetricsServiceResponseSchema, new Uint8Array(await res.arrayBuffer()));
    expect(answer.partialSuccess?.rejectedDataPoints).toBe(2n);
    expect(answer.partialSuccess?.errorMessage).toContain("session_id");
  });

  it("10^6 data points: 413 over HTTP (plain or gzip), RESOURCE_EXHAUSTED over gRPC; past 10^5 in one export, rejected unread", async () => {
    const big = toBinary(ExportMetricsServiceRequestSchema, metricsRequest(1_000_000, {}, "unknown.metric"));
    expect(big.length).toBeGreaterThan(MAX_OTLP_BODY_BYTES);
    expect((await post("/v1/metrics", alice.key, "application/x-protobuf", big)).status).toBe(413);
    const zipped = gzipSync(big);
    expect(zipped.length).toBeLessThan(MAX_OTLP_BODY_BYTES);
    expect(
      (await post("/v1/metrics", alice.key, "application/x-protobuf", zipped, { "content-encoding": "gzip" })).status,
    ).toBe(413);
    // Over gRPC the same bound is the message limit of the OTLP services.
    const grpc = grpcClient(MetricsService, server.grpcUrl, bearer(alice.key));
    await expect(
      grpc.call(MetricsService.method.export, metricsRequest(1_000_000, {}, "unknown.metric")),
    ).rejects.toMatchObject({
      code: 8, // RESOURCE_EXHAUSTED
    });
    // The same gzip-compressed: the listener refuses it once decompressed past the limit.
    const connect = createClient(
      MetricsService,
      createGrpcTransport({
        baseUrl: server.grpcUrl,
        sendCompression: compressionGzip,
        interceptors: [
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${alice.key}`);
            return next(req);
          },
        ],
      }),
    );
    await expect(connect.export(metricsRequest(1_000_000, {}, "unknown.metric"))).rejects.toMatchObject({
      code: Code.ResourceExhausted,
    });
    // Within the bound, more than 10^5 points: the first 10^5 are read, the rest rejected unread.
    const answer = await grpc.call(
      MetricsService.method.export,
      metricsRequest(130_000, {}, "claude_code.active_time.total"),
    );
    grpc.close();
    expect(answer.partialSuccess?.rejectedDataPoints).toBe(30_000n);
    expect(answer.partialSuccess?.errorMessage).toContain("at most 100000 data points per export");
  }, 120_000);

  it("a credential over its rate limit: 429 with Retry-After", async () => {
    const freeOrg = await createOrganization(server.platform.db, { name: "OTLP free", plan: "free" });
    const limited = await createTestUser(server.platform.db, freeOrg.id, "member");
    let last: Response | undefined;
    for (let i = 0; i < 70; i++) {
      last = await post("/v1/traces", limited.key, "application/json", "{}");
      if (last.status === 429) break;
    }
    expect(last?.status).toBe(429);
    expect(Number(last?.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(last?.headers.get("content-type")).toBe("application/json");
    expect(((await last!.json()) as { message: string }).message).not.toBe("");
  });

  it("the OTLP services in Connect's protocol (decoded by the framework, not the receiver): small exports received, past 64 KiB RESOURCE_EXHAUSTED", async () => {
    const connect = createClient(
      LogsService,
      createConnectTransport({
        baseUrl: server.grpcUrl,
        httpVersion: "2",
        interceptors: [
          (next) => (req) => {
            req.header.set("authorization", `Bearer ${alice.key}`);
            return next(req);
          },
        ],
      }),
    );
    const record = { body: { value: { case: "stringValue" as const, value: "claude_code.user_prompt" } } };
    const small = await connect.export({ resourceLogs: [{ scopeLogs: [{ logRecords: [record] }] }] });
    expect(small.partialSuccess?.rejectedLogRecords).toBe(1n); // no time: rejected, counted, so received
    const large = { resourceLogs: [{ scopeLogs: [{ logRecords: Array.from({ length: 3_000 }, () => record) }] }] };
    expect(
      toBinary(ExportLogsServiceRequestSchema, create(ExportLogsServiceRequestSchema, large)).length,
    ).toBeGreaterThan(MAX_DECODED_GRPC_BYTES);
    await expect(connect.export(large)).rejects.toMatchObject({ code: Code.ResourceExhausted });
  });

  it("OTLP/gRPC logs from the SDK's gRPC exporter with a user's key: partial success in the answer", async () => {
    const grpc = grpcClient(LogsService, server.grpcUrl, bearer(alice.key));
    const answer = await grpc.call(LogsService.method.export, {
      resourceLogs: [
        {
          scopeLogs: [{ logRecords: [{ body: { value: { case: "stringValue", value: "claude_code.user_prompt" } } }] }],
        },
      ],
    });
    grpc.close();
    // No time at all: rejected, counted.
    expect(answer.partialSuccess?.rejectedLogRecords).toBe(1n);
    expect(ExportLogsServiceResponseSchema.typeName).toBe(
      "opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse",
    );
  });
});
