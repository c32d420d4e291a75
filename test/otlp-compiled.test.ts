// OTLP through the compiled service, as the image runs it: there, OTLP/HTTP bodies and OTLP/gRPC
// messages are decoded and mapped on worker threads (services/analytics/otlp/mapping-pool.ts),
// while a server run from TypeScript source, as test/otlp.test.ts runs it, maps them on its main
// thread. The same telemetry, exported by the OpenTelemetry SDK's own exporters (OTLP/HTTP
// protobuf, gzip protobuf and JSON; OTLP/gRPC plain and gzip; delta and cumulative), goes to the
// compiled service for one organization and to a server in this process for another, with the
// same users: both store the same events. test/otlp.test.ts checks the in-process server's events
// against an independent reference, so this carries that check over to the threads. Then, on the
// threads: a retried export changes nothing, a truncated body is a 400 (INVALID_ARGUMENT over
// gRPC), and an export past the process's decode budget waits for none: it is a 503 with
// Retry-After, UNAVAILABLE over gRPC (decode-budget.ts).
import { join } from "node:path";
import { tmpdir } from "node:os";
import { create, toBinary } from "@bufbuild/protobuf";
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
import { AggregationTemporality, MeterProvider, type ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { readFile } from "node:fs/promises";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildService } from "../bench/build.js";
import { emptyLogRecordsBody } from "../bench/otlp-exports.js";
import { type CompiledService, startCompiledService } from "../bench/processes.js";
import {
  ExportLogsServiceRequestSchema,
  LogsService,
} from "../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { createLogger } from "../services/platform/logger.js";
import { type RunningServer, startServer } from "../services/server.js";
import { envelope, H2Client } from "./reliability/support/raw-h2.js";
import { createTestDatabase, type TestDatabase } from "./support/database.js";
import { createTestOrg, createTestServiceAccount, createTestUser } from "./support/fixtures.js";
import { createTestKv } from "./support/kv.js";
import { exportLogs, exportMetrics, ManualReader, withEnv } from "./support/otel-sdk.js";
import { testServerConfig } from "./support/server.js";

const ROOT = join(import.meta.dirname, "..");
const REAL = process.env.TEST_DATABASE_URL;
const NOW = Date.now();
const EMAILS = ["alice@compiled.test", "bob@compiled.test"];

/** Where the telemetry goes: a server and the organization whose collector token it is sent with. */
interface Target {
  restUrl: string;
  grpcUrl: string;
  orgId: string;
  token: string;
}

let database: TestDatabase<Database>;
let inProcess: RunningServer;
let compiled: CompiledService;
let compiledUrl: string;
let logFile: string;
let threaded: Target;
let mainThread: Target;

/** Exporters as Claude Code's environment configures them (read when constructed). */
function exportersFor(target: Target, protocol: "http/protobuf" | "http/json" | "grpc", compression: "gzip" | "none") {
  const env = {
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_EXPORTER_OTLP_ENDPOINT: protocol === "grpc" ? target.grpcUrl : target.restUrl,
    OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer ${target.token}`,
    OTEL_EXPORTER_OTLP_COMPRESSION: compression,
  };
  return withEnv(env, () =>
    protocol === "http/protobuf"
      ? { logs: new ProtoLogExporter(), metrics: new ProtoMetricExporter() }
      : protocol === "grpc"
        ? { logs: new GrpcLogExporter(), metrics: new GrpcMetricExporter() }
        : { logs: new JsonLogExporter(), metrics: new JsonMetricExporter() },
  );
}

/**
 * A Claude Code process's telemetry for both users, recorded once (log records captured, metrics
 * collected twice, so that a cumulative second collection carries the totals): what each target
 * is sent, identically.
 */
async function telemetry(temporality: AggregationTemporality, run: string) {
  const resource = resourceFromAttributes({ "service.name": "claude-code", "service.version": "2.1.0" });
  const reader = new ManualReader(() => temporality);
  const meters = new MeterProvider({ resource, readers: [reader] });
  const records: ReadableLogRecord[] = [];
  const capture: LogRecordExporter = {
    export: (batch, callback) => {
      records.push(...batch);
      callback({ code: 0 });
    },
    shutdown: async () => {},
    forceFlush: async () => {},
  };
  const logs = new LoggerProvider({ resource, processors: [new SimpleLogRecordProcessor({ exporter: capture })] });
  const meter = meters.getMeter("com.anthropic.claude_code");
  const logger = logs.getLogger("com.anthropic.claude_code.events");
  const counter = (name: string) => meter.createCounter(name);
  const collections: ResourceMetrics[] = [];
  for (const round of [1, 2]) {
    EMAILS.forEach((email, u) => {
      const attrs: Attributes = {
        "user.email": email,
        "session.id": `${run}-session-${u}`,
        "terminal.type": u === 0 ? "vscode" : "non-interactive",
      };
      const model = u === 0 ? "claude-sonnet-4-5" : "claude-opus-4-1";
      counter("claude_code.session.count").add(1, attrs);
      for (const [type, n] of [
        ["input", 1000],
        ["output", 300],
        ["cacheRead", 5000],
        ["cacheCreation", 700],
      ] as const)
        counter("claude_code.token.usage").add(n * round * (u + 1), { ...attrs, type, model });
      counter("claude_code.cost.usage").add(0.25 * round, { ...attrs, model });
      counter("claude_code.lines_of_code.count").add(40 * round, { ...attrs, type: "added" });
      counter("claude_code.lines_of_code.count").add(12, { ...attrs, type: "removed" });
      counter("claude_code.commit.count").add(round, attrs);
      counter("claude_code.code_edit_tool.decision").add(3, {
        ...attrs,
        decision: round === 1 ? "accept" : "reject",
        tool_name: "Edit",
        language: "TypeScript",
      });
      for (let i = 0; i < 20; i++) {
        const event = (name: string, more: Attributes) =>
          logger.emit({
            body: `claude_code.${name}`,
            timestamp: NOW - 60_000 + round * 1000 + i,
            attributes: { "event.name": name, "event.sequence": round * 100 + i, ...attrs, ...more },
          });
        event("user_prompt", { prompt_length: String(40 + i) });
        event("api_request", {
          model,
          cost_usd: "0.01",
          input_tokens: String(100 + i),
          output_tokens: "30",
          cache_read_tokens: "500",
          cache_creation_tokens: "70",
        });
        event("tool_result", { tool_name: i % 2 ? "Read" : "mcp__github__create_pull_request", success: "true" });
      }
    });
    const { resourceMetrics, errors } = await reader.collect();
    expect(errors).toEqual([]);
    collections.push(resourceMetrics);
  }
  return { records, collections };
}

/** The organization's stored events, without what names the organization and its users' IDs. */
async function storedEvents(orgId: string): Promise<unknown[]> {
  const { rows } = await sql<Record<string, unknown>>`
    select user_email, occurred_at, session_id, client, type, autonomy, role, model_id, model_tier,
      input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, tool, mcp_server, name,
      language, lines_added, lines_removed, decision, cost_usd, source
    from analytics_events where org_id = ${orgId}
    order by 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22`.execute(database.db);
  return rows.map((r) => ({ ...r, occurred_at: (r.occurred_at as Date).toISOString() }));
}

async function target(restUrl: string, grpcUrl: string): Promise<Target> {
  const orgId = await createTestOrg(database.db, "OTLP compiled");
  for (const email of EMAILS) await createTestUser(database.db, orgId, "member", email);
  const token = await createTestServiceAccount(database.db, { orgId, scopes: ["analytics.ingest"] });
  return { restUrl, grpcUrl, orgId, token };
}

describe.skipIf(!REAL)("OTLP on the compiled service's mapping threads", () => {
  beforeAll(async () => {
    const buildDir = await buildService(ROOT);
    database = await createTestDatabase<Database>(migrations);
    const config = testServerConfig({ SERVICES: "analytics,organization,edge" });
    inProcess = await startServer(config, createLogger(config.logLevel), { database, kv: await createTestKv() });
    logFile = join(tmpdir(), `agentplane-otlp-compiled-${process.pid}.log`);
    compiled = await startCompiledService(buildDir, database.url, logFile, ROOT, { env: { LOG_LEVEL: "debug" } });
    compiledUrl = compiled.restUrl;
    threaded = await target(compiledUrl, compiled.grpcUrl);
    mainThread = await target(inProcess.restUrl!, inProcess.grpcUrl);
  }, 240_000);

  afterAll(async () => {
    await compiled?.stop();
    await inProcess?.stop();
    await database?.close();
  });

  for (const [protocol, compression, temporality] of [
    ["http/protobuf", "none", AggregationTemporality.DELTA],
    ["http/protobuf", "gzip", AggregationTemporality.CUMULATIVE],
    ["http/json", "none", AggregationTemporality.CUMULATIVE],
    ["grpc", "none", AggregationTemporality.CUMULATIVE],
    ["grpc", "gzip", AggregationTemporality.DELTA],
  ] as const) {
    it(`stores what the in-process server stores: ${protocol}, ${compression}, ${AggregationTemporality[temporality].toLowerCase()}`, async () => {
      const { records, collections } = await telemetry(temporality, `${protocol}-${compression}`);
      for (const t of [threaded, mainThread]) {
        const exporters = exportersFor(t, protocol, compression);
        await exportLogs(exporters.logs, records);
        for (const collection of collections) await exportMetrics(exporters.metrics, collection);
      }
      const onThreads = await storedEvents(threaded.orgId);
      expect(onThreads.length).toBeGreaterThan(records.length);
      expect(new Set(onThreads.map((e) => (e as { type: string }).type))).toEqual(
        new Set([
          "session_start",
          "model_usage",
          "lines_changed",
          "git_commit",
          "edit_decision",
          "message",
          "tool_call",
        ]),
      );
      expect(onThreads).toEqual(await storedEvents(mainThread.orgId));
    });
  }

  it("mapped them on its threads: the service's log says they started", async () => {
    const log = await readFile(logFile, "utf8");
    expect(log).toContain("an OTLP mapping thread started");
  });

  it("stores a retried export once", async () => {
    const { records, collections } = await telemetry(AggregationTemporality.DELTA, "retried");
    const exporters = exportersFor(threaded, "http/protobuf", "none");
    await exportLogs(exporters.logs, records);
    await exportMetrics(exporters.metrics, collections[0]!);
    const before = await storedEvents(threaded.orgId);
    await exportLogs(exporters.logs, records);
    await exportMetrics(exporters.metrics, collections[0]!);
    expect(await storedEvents(threaded.orgId)).toEqual(before);
  });

  it("answers 400 to a truncated body, decoded on a thread", async () => {
    const body = toBinary(
      ExportLogsServiceRequestSchema,
      create(ExportLogsServiceRequestSchema, {
        resourceLogs: [{ scopeLogs: [{ logRecords: [{ eventName: "claude_code.user_prompt", timeUnixNano: 1n }] }] }],
      }),
    );
    const res = await fetch(`${compiledUrl}/v1/logs`, {
      method: "POST",
      headers: { authorization: `Bearer ${threaded.token}`, "content-type": "application/x-protobuf" },
      body: body.subarray(0, body.length - 3),
    });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toBe("application/x-protobuf");
  });

  it("answers 503 with Retry-After to a body past the decode budget, while the budget holds another", async () => {
    // Two of the bodies that take the most memory per byte (about 480 MB each, decoded) at once:
    // the budget holds one; the other is refused before it is decoded.
    const body = emptyLogRecordsBody();
    const answers = await Promise.all(
      [1, 2].map(async () => {
        const res = await fetch(`${compiledUrl}/v1/logs`, {
          method: "POST",
          headers: { authorization: `Bearer ${threaded.token}`, "content-type": "application/x-protobuf" },
          body,
        });
        await res.arrayBuffer();
        return `${res.status} ${res.headers.get("retry-after")}`;
      }),
    );
    expect(answers.sort()).toEqual(["200 null", "503 1"]);
  }, 60_000);

  it("over gRPC too: INVALID_ARGUMENT to a truncated message, UNAVAILABLE with Retry-After past the decode budget", async () => {
    const client = new H2Client(compiled.grpcUrl);
    const call = async (message: Uint8Array) => {
      const res = await client.request(
        {
          path: `/${LogsService.typeName}/Export`,
          headers: { "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${threaded.token}` },
          body: [envelope(0, message)],
        },
        60_000,
      );
      const from = res.trailers["grpc-status"] === undefined ? res.headers : res.trailers;
      return [from["grpc-status"], decodeURIComponent(String(from["grpc-message"] ?? "")), from["retry-after"] ?? null];
    };
    try {
      const [code, message] = await call(Buffer.from([0x0a, 0x05, 0x12]));
      expect([code, message]).toEqual(["3", expect.stringMatching(/^parse binary: /)]);
      const body = emptyLogRecordsBody();
      const answers = await Promise.all([1, 2].map(() => call(body)));
      expect(answers.map(([c, , retryAfter]) => `${c} ${retryAfter}`).sort()).toEqual(["0 null", "14 1"]);
    } finally {
      client.close();
    }
  }, 60_000);
});
