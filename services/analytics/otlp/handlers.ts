// The OTLP receiver's services: OTLP/gRPC (opentelemetry.proto.collector.{logs,metrics,trace}.v1,
// the OpenTelemetry project's own services, on the public gRPC port) and OTLP/HTTP
// (agentplane.analytics.v1.OtlpHttpService: POST /v1/logs, /v1/metrics, /v1/traces through
// either REST edge, the raw body in google.api.HttpBody). Both do the same work (receiver.ts).
import { create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Kysely } from "kysely";
import type { OtlpHttpService } from "../../../gen/agentplane/analytics/v1/otlp_pb.js";
import { HttpBodySchema, type HttpBody } from "../../../gen/google/api/httpbody_pb.js";
import {
  ExportLogsServiceRequestSchema,
  ExportLogsServiceResponseSchema,
  type LogsService,
} from "../../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import {
  ExportMetricsServiceRequestSchema,
  ExportMetricsServiceResponseSchema,
  type MetricsService,
} from "../../../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import {
  ExportTraceServiceRequestSchema,
  ExportTraceServiceResponseSchema,
  type TraceService,
} from "../../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { Database } from "../../database.js";
import { DomainError } from "../../platform/errors.js";
import type { Logger } from "../../platform/logger.js";
import { attributorFor } from "./attribution.js";
import { receiveLogs, receiveMetrics } from "./receiver.js";
import { CONTENT_TYPES, encodeStatus, encodingOf } from "../../platform/otlp-http.js";
import { decodeExport, encodeMessage, OtlpHttpError } from "./wire.js";

export interface OtlpDeps {
  db: Kysely<Database>;
  logger?: Logger;
  now?: () => number;
  /** Exports this process works on at once; more are answered UNAVAILABLE (503) with Retry-After. */
  maxConcurrent?: number;
}

/** Retry-After of an export refused because the receiver is busy: exporters back off and retry. */
export const BUSY_RETRY_AFTER_SECONDS = 1;

export const TRACES_NOT_STORED = "traces are accepted and not stored: agentplane keeps metrics and log events only";

type Work = <T>(run: () => Promise<T>) => Promise<T>;

/**
 * Bounds the exports in flight in this process (each holds its decoded request and a database
 * connection): past the bound an export is UNAVAILABLE with Retry-After, which OTLP exporters
 * retry with backoff, rather than queueing without end.
 */
function concurrencyLimit(max: number): Work {
  let inFlight = 0;
  return async (run) => {
    if (inFlight >= max) {
      throw new DomainError("unavailable", `the OTLP receiver is busy; retry after ${BUSY_RETRY_AFTER_SECONDS} s`, {
        "retry-after": String(BUSY_RETRY_AFTER_SECONDS),
      });
    }
    inFlight++;
    try {
      return await run();
    } finally {
      inFlight--;
    }
  };
}

interface Receivers {
  logs(
    ctx: HandlerContext,
    req: MessageShape<typeof ExportLogsServiceRequestSchema>,
  ): Promise<{ rejected: number; message: string }>;
  metrics(
    ctx: HandlerContext,
    req: MessageShape<typeof ExportMetricsServiceRequestSchema>,
  ): Promise<{ rejected: number; message: string }>;
}

function receivers(deps: OtlpDeps): { work: Work; receive: Receivers } {
  const now = deps.now ?? Date.now;
  // Each export in flight holds its decoded request (see MAX_OTLP_BODY_BYTES) and a connection.
  const work = concurrencyLimit(deps.maxConcurrent ?? 4);
  return {
    work,
    receive: {
      logs: async (ctx, req) => receiveLogs(deps.db, req, await attributorFor(ctx, deps.db), now(), deps.logger),
      metrics: async (ctx, req) => receiveMetrics(deps.db, req, await attributorFor(ctx, deps.db), now(), deps.logger),
    },
  };
}

/** Both ways in, sharing one bound on the exports in flight. */
export function createOtlpServices(deps: OtlpDeps): {
  logs: Partial<ServiceImpl<typeof LogsService>>;
  metrics: Partial<ServiceImpl<typeof MetricsService>>;
  trace: Partial<ServiceImpl<typeof TraceService>>;
  http: Partial<ServiceImpl<typeof OtlpHttpService>>;
} {
  const shared = receivers(deps);
  return { ...grpcServices(shared), http: httpService(shared) };
}

function grpcServices({ work, receive }: ReturnType<typeof receivers>): {
  logs: Partial<ServiceImpl<typeof LogsService>>;
  metrics: Partial<ServiceImpl<typeof MetricsService>>;
  trace: Partial<ServiceImpl<typeof TraceService>>;
} {
  return {
    logs: {
      export: (req, ctx) =>
        work(async () => {
          const o = await receive.logs(ctx, req);
          return { partialSuccess: { rejectedLogRecords: BigInt(o.rejected), errorMessage: o.message } };
        }),
    },
    metrics: {
      export: (req, ctx) =>
        work(async () => {
          const o = await receive.metrics(ctx, req);
          return { partialSuccess: { rejectedDataPoints: BigInt(o.rejected), errorMessage: o.message } };
        }),
    },
    trace: {
      // Accepted, not stored: an exporter sending traces too keeps working, and says so.
      export: async () => ({ partialSuccess: { rejectedSpans: 0n, errorMessage: TRACES_NOT_STORED } }),
    },
  };
}

/** One HttpBody message of `data` in `contentType`. */
const body = (contentType: string, data: Uint8Array): HttpBody => create(HttpBodySchema, { contentType, data });

/**
 * `use` of `value`, with nothing here holding `value` once `use` has it: a decoded export is
 * thousands of objects, garbage once the receiver has mapped it, and would otherwise live (and be
 * copied by every young-generation collection) until its events are stored and the answer written.
 */
function handOver<T, R>(value: T, use: (value: T) => Promise<R>): () => Promise<R> {
  let held: T | undefined = value;
  return () => {
    const taken = held as T;
    held = undefined;
    return use(taken);
  };
}

/**
 * An OTLP/HTTP answer: the Export*ServiceResponse in the request's encoding, or for a request
 * OTLP answers with an HTTP error (undecodable 400, too large 413, other content type 415) that
 * status in x-http-code (both edges turn it into the response status) and a google.rpc.Status.
 */
async function* httpExport<Req extends DescMessage, Res extends DescMessage>(
  ctx: HandlerContext,
  work: Work,
  request: HttpBody,
  requestSchema: Req,
  responseSchema: Res,
  handle: (req: MessageShape<Req>) => Promise<MessageShape<Res>>,
): AsyncGenerator<HttpBody> {
  const requested = encodingOf(request.contentType) ?? "protobuf";
  let decoded: ReturnType<typeof decodeExport<Req>>;
  try {
    decoded = decodeExport(requestSchema, request.contentType, request.data);
  } catch (e) {
    if (!(e instanceof OtlpHttpError)) throw e;
    ctx.responseHeader.set("x-http-code", String(e.status));
    yield body(CONTENT_TYPES[requested], encodeStatus(e.message, requested));
    return;
  }
  const { encoding } = decoded;
  const response = await work(handOver(decoded.message, handle));
  yield body(CONTENT_TYPES[encoding], encodeMessage(responseSchema, response, encoding));
}

function httpService({ work, receive }: ReturnType<typeof receivers>): Partial<ServiceImpl<typeof OtlpHttpService>> {
  return {
    exportLogs: (req, ctx) =>
      httpExport(ctx, work, req, ExportLogsServiceRequestSchema, ExportLogsServiceResponseSchema, async (r) => {
        const o = await receive.logs(ctx, r);
        return create(ExportLogsServiceResponseSchema, {
          partialSuccess: { rejectedLogRecords: BigInt(o.rejected), errorMessage: o.message },
        });
      }),
    exportMetrics: (req, ctx) =>
      httpExport(ctx, work, req, ExportMetricsServiceRequestSchema, ExportMetricsServiceResponseSchema, async (r) => {
        const o = await receive.metrics(ctx, r);
        return create(ExportMetricsServiceResponseSchema, {
          partialSuccess: { rejectedDataPoints: BigInt(o.rejected), errorMessage: o.message },
        });
      }),
    exportTraces: (req, ctx) =>
      httpExport(ctx, work, req, ExportTraceServiceRequestSchema, ExportTraceServiceResponseSchema, async () =>
        create(ExportTraceServiceResponseSchema, {
          partialSuccess: { rejectedSpans: 0n, errorMessage: TRACES_NOT_STORED },
        }),
      ),
  };
}
