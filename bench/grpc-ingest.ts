// Native ingest and OTLP ingest side by side, both over gRPC into the same service process, for
// bench:analytics: TelemetryService.Ingest (our event format, on the internal port) and the
// OpenTelemetry LogsService and MetricsService Export (on the public port), each from a Connect
// gRPC client in the benchmark's process, the same batch size and calls in flight, the messages
// built before the clock starts and encoded by the same client library as they are sent. The
// native ingest timed in bench:analytics' main figure runs in the benchmark's own process with no
// transport and no decoding at all; this is the comparison a client of either sees.
import { create } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  type IngestRequest,
  IngestRequestSchema,
  TelemetryEventSchema,
  TelemetryService,
} from "../gen/agentplane/analytics/v1/analytics_pb.js";
import {
  type ExportLogsServiceRequest,
  LogsService,
} from "../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import {
  type ExportMetricsServiceRequest,
  MetricsService,
} from "../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import type { IncomingEvent } from "../services/analytics/ingest/events.js";

export interface GrpcIngestInput {
  /** The service's public and internal gRPC ports (http://host:port). */
  publicUrl: string;
  internalUrl: string;
  /** A service account's token with the analytics.ingest scope, bound to the organization. */
  token: string;
  concurrency: number;
  /** Native events in three equal turns (before, between and after the two OTLP kinds), distinct IDs. */
  nativeEvents: readonly IncomingEvent[];
  batch: number;
  logs: readonly ExportLogsServiceRequest[];
  metrics: readonly ExportMetricsServiceRequest[];
  itemsPerExport: number;
}

export interface GrpcIngestTiming {
  logRecordsPerSecond: number;
  dataPointsPerSecond: number;
  /** The native ingest's events/s in the turns before and after each OTLP kind (their mean). */
  nativeBeside: { logs: number; metrics: number };
}

/** Runs `calls` with `concurrency` in flight; returns the items per second. */
async function timed<T>(
  calls: readonly T[],
  itemsOf: (call: T) => number,
  concurrency: number,
  send: (call: T) => Promise<void>,
): Promise<number> {
  let next = 0;
  let items = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < calls.length) {
        const call = calls[next++]!;
        await send(call);
        items += itemsOf(call);
      }
    }),
  );
  return items / ((performance.now() - started) / 1000);
}

export async function timeIngestOverGrpc(input: GrpcIngestInput): Promise<GrpcIngestTiming> {
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${input.token}`);
    return next(req);
  };
  const transport = (baseUrl: string) => createGrpcTransport({ baseUrl, interceptors: [auth] });
  const telemetry: Client<typeof TelemetryService> = createClient(TelemetryService, transport(input.internalUrl));
  const logs = createClient(LogsService, transport(input.publicUrl));
  const metrics = createClient(MetricsService, transport(input.publicUrl));

  const requests: IngestRequest[] = [];
  for (let i = 0; i < input.nativeEvents.length; i += input.batch)
    requests.push(
      create(IngestRequestSchema, {
        events: input.nativeEvents.slice(i, i + input.batch).map((e) => create(TelemetryEventSchema, e)),
      }),
    );
  // A turn of each, untimed: both paths of the service warm.
  await telemetry.ingest(requests.pop()!);
  await logs.export(input.logs[input.logs.length - 1]!);
  await metrics.export(input.metrics[input.metrics.length - 1]!);

  const third = Math.floor(requests.length / 3);
  const nativeTurn = (turn: number) =>
    timed(
      requests.slice(turn * third, (turn + 1) * third),
      (r) => r.events.length,
      input.concurrency,
      async (r) => {
        const res = await telemetry.ingest(r);
        if (res.rejected.length > 0) throw new Error(`native ingest over gRPC: ${res.rejected[0]!.reason}`);
        if (res.accepted !== r.events.length) throw new Error("native ingest over gRPC: events not stored");
      },
    );

  /** The exports of one kind but the last (sent to warm up), timed: items/s; a rejection ends the run. */
  const otlpTurn = <T>(
    exports: readonly T[],
    kind: string,
    send: (r: T) => Promise<{ rejected: bigint | undefined; message: string | undefined }>,
  ) =>
    timed(
      exports.slice(0, -1),
      () => input.itemsPerExport,
      input.concurrency,
      async (r) => {
        const { rejected, message } = await send(r);
        if ((rejected ?? 0n) !== 0n) throw new Error(`OTLP/gRPC ${kind}: ${message}`);
      },
    );

  const before = await nativeTurn(0);
  const logRecordsPerSecond = await otlpTurn(input.logs, "logs", async (r) => {
    const answer = (await logs.export(r)).partialSuccess;
    return { rejected: answer?.rejectedLogRecords, message: answer?.errorMessage };
  });
  const between = await nativeTurn(1);
  const dataPointsPerSecond = await otlpTurn(input.metrics, "metrics", async (r) => {
    const answer = (await metrics.export(r)).partialSuccess;
    return { rejected: answer?.rejectedDataPoints, message: answer?.errorMessage };
  });
  const after = await nativeTurn(2);
  return {
    logRecordsPerSecond: Math.round(logRecordsPerSecond),
    dataPointsPerSecond: Math.round(dataPointsPerSecond),
    nativeBeside: { logs: Math.round((before + between) / 2), metrics: Math.round((between + after) / 2) },
  };
}
