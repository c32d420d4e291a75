// bench:otlp-memory: the peak resident memory of the compiled service while it receives OTLP
// exports of the most memory per byte there is (4 MiB bodies, the largest taken, of empty log
// records: 2 * 10^6 objects once decoded), N at once, over OTLP/HTTP and over OTLP/gRPC, beside
// the analytics pod's memory limit (1 GiB, deploy/base/services/analytics.yaml). A fresh service
// per row, so that each peak (the kernel's VmHWM) is that row's. A last row sends the same kind of
// message to a method with no decode budget of its own: TelemetryService/Ingest over gRPC, 32 MiB
// (the services' message limit) of empty events, refused before it is decoded (docs/grpc.md,
// "Messages out of proportion to their bytes"), where it was about 2 GB decoded.
//
// Usage: DATABASE_URL=postgres://… npm run bench:otlp-memory -- [--concurrency 1,2,4]
// A scratch database is created on DATABASE_URL's server and dropped afterwards.
import { readFileSync } from "node:fs";
import { connect } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildService } from "../bench/build.js";
import { startCompiledService } from "../bench/processes.js";
import { admin as adminStatement } from "../bench/storage.js";
import { emptyLogRecordsBody } from "../bench/otlp-exports.js";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { openDatabase } from "../services/platform/db.js";
import { createLogger } from "../services/platform/logger.js";
import { migrateToLatest } from "../services/platform/migrator.js";
import { createOrganization } from "../services/organization/queries.js";
import { createServiceAccount } from "../services/organization/service-accounts.js";

const { values: args } = parseArgs({ options: { concurrency: { type: "string", default: "1,2,4" } } });
const LEVELS = args.concurrency!.split(",").map(Number);
const ROOT = join(import.meta.dirname, "..");
const POD_LIMIT_MB = 1024;
const serverUrl = process.env.DATABASE_URL;
if (!serverUrl) {
  console.error("set DATABASE_URL to a Postgres server (a scratch database is created on it)");
  process.exit(2);
}

const logger = createLogger("warn");
const name = `agentplane_bench_otlp_memory_${process.pid}`;
const admin = (statement: string) => adminStatement(serverUrl, statement);
const url = new URL(serverUrl);
url.pathname = `/${name}`;

/** A gRPC call's body: the 5-byte length prefix, then the message. */
function grpcFrame(message: Uint8Array): Uint8Array {
  const frame = new Uint8Array(5 + message.length);
  new DataView(frame.buffer).setUint32(1, message.length);
  frame.set(message, 5);
  return frame;
}

const LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export";
const INGEST = "/agentplane.analytics.v1.TelemetryService/Ingest";

/** One unary gRPC call over plain HTTP/2: its grpc-status (or the HTTP status). */
function grpcExport(grpcUrl: string, path: string, token: string, message: Uint8Array): Promise<string> {
  return new Promise((resolve, reject) => {
    const session = connect(grpcUrl);
    session.on("error", reject);
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      authorization: `Bearer ${token}`,
    });
    let status = "";
    stream.on("response", (headers) => (status = String(headers["grpc-status"] ?? headers[":status"])));
    stream.on("trailers", (trailers) => (status = String(trailers["grpc-status"] ?? status)));
    stream.on("data", () => {});
    stream.on("end", () => {
      session.close();
      resolve(`grpc-status ${status}`);
    });
    stream.on("error", reject);
    stream.end(grpcFrame(message));
  });
}

await admin(`create database ${name}`);
try {
  const database = await openDatabase<Database>({ databaseUrl: url.toString(), dataDir: "memory://", logger });
  await migrateToLatest(database.db, migrations, logger);
  const org = await createOrganization(database.db, { name: "bench otlp memory" });
  const { token } = await createServiceAccount(database.db, {
    name: "bench",
    scopes: ["analytics.ingest"],
    orgId: org.id,
  });
  await database.close();
  const buildDir = await buildService(ROOT);
  const body = emptyLogRecordsBody();
  console.log(
    `each export: ${body.length} bytes of protobuf, ${(body.length - 10) / 2} empty log records; the pod's limit ${POD_LIMIT_MB} MB`,
  );
  // IngestRequest.events (field 1): 32 MiB of empty elements, two bytes each.
  const emptyEvents = new Uint8Array(32 * 1024 * 1024);
  for (let i = 0; i < emptyEvents.length; i += 2) emptyEvents[i] = (1 << 3) | 2;
  const rows = [
    ...(["OTLP/HTTP", "OTLP/gRPC"] as const).flatMap((protocol) => LEVELS.map((n) => [protocol, n] as const)),
    ["TelemetryService/Ingest over gRPC, 32 MiB of empty events", 1] as const,
  ];
  for (const [protocol, n] of rows) {
    const service = await startCompiledService(
      buildDir,
      url.toString(),
      join(tmpdir(), `agentplane-bench-otlp-memory-${process.pid}.log`),
      ROOT,
    );
    try {
      const peakMb = () =>
        Number(readFileSync(`/proc/${service.child.pid}/status`, "utf8").match(/VmHWM:\s+(\d+)/)![1]) / 1024;
      const idle = peakMb();
      const answers = await Promise.all(
        Array.from({ length: n }, () =>
          protocol === "OTLP/HTTP"
            ? fetch(`${service.restUrl}/v1/logs`, {
                method: "POST",
                headers: { authorization: `Bearer ${token}`, "content-type": "application/x-protobuf" },
                body,
              }).then(async (r) => {
                await r.arrayBuffer();
                return `${r.status}${r.headers.get("retry-after") ? ` (Retry-After ${r.headers.get("retry-after")})` : ""}`;
              })
            : protocol === "OTLP/gRPC"
              ? grpcExport(service.grpcUrl, LOGS_EXPORT, token, body)
              : grpcExport(service.internalGrpcUrl, INGEST, token, emptyEvents),
        ),
      );
      const counts = new Map<string, number>();
      for (const a of answers) counts.set(a, (counts.get(a) ?? 0) + 1);
      const peak = peakMb();
      console.log(
        `${protocol}, ${n} at once: peak RSS ${peak.toFixed(0)} MB (${idle.toFixed(0)} MB before), ` +
          `${((100 * peak) / POD_LIMIT_MB).toFixed(0)}% of the pod's limit; answers ${[...counts].map(([a, c]) => `${c} × ${a}`).join(", ")}`,
      );
    } finally {
      await service.stop();
    }
  }
} finally {
  await admin(`drop database if exists ${name} with (force)`);
}
