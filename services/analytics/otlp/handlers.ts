// The OTLP receiver's services: OTLP/gRPC (opentelemetry.proto.collector.{logs,metrics,trace}.v1,
// the OpenTelemetry project's own services, on the public gRPC port) and OTLP/HTTP
// (agentplane.analytics.v1.OtlpHttpService: POST /v1/logs, /v1/metrics, /v1/traces through
// either REST edge, the raw body in google.api.HttpBody). Both do the same work (receiver.ts).
// OTLP/HTTP bodies, and OTLP/gRPC messages in binary gRPC (which the gRPC listener leaves
// undecoded: platform/undecoded.ts), are decoded and mapped on the mapping threads
// (mapping-pool.ts) within the process's decode budget. A message another protocol delivered
// decoded (Connect, gRPC-Web, gRPC+JSON; the module limits those to MAX_DECODED_GRPC_BYTES) is
// mapped here.
import { create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Kysely } from "kysely";
import type { OtlpHttpService } from "../../../gen/agentplane/analytics/v1/otlp_pb.js";
import { HttpBodySchema, type HttpBody } from "../../../gen/google/api/httpbody_pb.js";
import {
  type ExportLogsServiceRequestSchema,
  ExportLogsServiceResponseSchema,
  type LogsService,
} from "../../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import {
  type ExportMetricsServiceRequestSchema,
  ExportMetricsServiceResponseSchema,
  type MetricsService,
} from "../../../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import {
  ExportTraceServiceResponseSchema,
  type TraceService,
} from "../../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { Database } from "../../database.js";
import { DomainError } from "../../platform/errors.js";
import type { Logger } from "../../platform/logger.js";
import { kUndecodedRequest } from "../../platform/undecoded.js";
import { attributorFor } from "./attribution.js";
import { type MappingJob, RETRY_AFTER_SECONDS } from "./mapping-job.js";
import { MappingThreads, retryLater } from "./mapping-pool.js";
import { mapLogs, mapMetrics } from "./mapping.js";
import { type Outcome, Preparation, receiveDecoded, receiveMapped } from "./receiver.js";
import { CONTENT_TYPES, encodeStatus, encodingOf, type OtlpEncoding } from "../../platform/otlp-http.js";
import { encodeMessage } from "./wire.js";

export interface OtlpDeps {
  db: Kysely<Database>;
  logger?: Logger;
  now?: () => number;
  /** Exports this process works on at once; more are answered UNAVAILABLE (503) with Retry-After. */
  maxConcurrent?: number;
  /** Where OTLP/HTTP bodies and binary OTLP/gRPC messages are decoded and mapped: the process's mapping threads unless given. */
  mappingThreads?: MappingThreads;
}

/** The process's mapping threads, shared by every server it runs (started by the first exports). */
let sharedMappingThreads: MappingThreads | undefined;

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
      throw retryLater(`the OTLP receiver is busy; retry after ${RETRY_AFTER_SECONDS} s`);
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
  /** An OTLP/gRPC logs export: undecoded (in the context) or as another protocol decoded it. */
  logs(ctx: HandlerContext, req: MessageShape<typeof ExportLogsServiceRequestSchema>): Promise<Outcome | undefined>;
  metrics(
    ctx: HandlerContext,
    req: MessageShape<typeof ExportMetricsServiceRequestSchema>,
  ): Promise<Outcome | undefined>;
  /** An OTLP/gRPC traces export: decoded (a message that does not decode is refused), not stored. */
  traces(ctx: HandlerContext): Promise<void>;
  /** An OTLP/HTTP body, decoded and mapped on the mapping thread: its outcome, or the HTTP error OTLP answers. */
  http(ctx: HandlerContext, kind: MappingJob["kind"], body: HttpBody): Promise<HttpOutcome>;
}

type HttpOutcome =
  | { encoding: OtlpEncoding; outcome: Outcome | undefined }
  | { refused: { status: number; message: string } };

/** An OTLP/HTTP refusal as the domain error whose gRPC code (errors.ts) carries it over gRPC. */
function grpcRefusal({ status, message }: { status: number; message: string }): DomainError {
  const kind = status === 400 ? "invalid_argument" : status === 413 ? "resource_exhausted" : undefined;
  // 415 (another content type) cannot come from gRPC, whose messages go as protobuf.
  if (kind === undefined) throw new Error(`an OTLP/gRPC message refused with HTTP ${status}: ${message}`);
  return new DomainError(kind, message);
}

function receivers(deps: OtlpDeps): { work: Work; receive: Receivers } {
  const now = deps.now ?? Date.now;
  // Each export in flight holds its decoded request (see MAX_OTLP_BODY_BYTES) and a connection.
  const work = concurrencyLimit(deps.maxConcurrent ?? 4);
  const threads = () => deps.mappingThreads ?? (sharedMappingThreads ??= new MappingThreads(deps.logger));
  /** An export's bytes decoded and mapped on a mapping thread, then received here. */
  const mapped = async (
    ctx: HandlerContext,
    kind: MappingJob["kind"],
    body: Pick<MappingJob, "contentType" | "data" | "grpc">,
  ): Promise<HttpOutcome> => {
    // Traces are decoded (an undecodable one is still a 400, INVALID_ARGUMENT over gRPC) and not
    // stored: no owner to find.
    const attributor = kind === "traces" ? undefined : await attributorFor(ctx, deps.db);
    const preparation = attributor && new Preparation(attributor);
    const reply = await threads().map({ kind, ...body, orgId: attributor?.orgId ?? "" }, (named) =>
      preparation?.start(named),
    );
    if ("failed" in reply) throw new Error(`mapping an OTLP export failed: ${reply.failed}`);
    if ("refused" in reply) return reply;
    if ("busy" in reply) throw retryLater(reply.busy);
    const outcome =
      reply.mapped && attributor && preparation
        ? await receiveMapped(deps.db, reply.mapped, attributor, now(), deps.logger, preparation)
        : undefined;
    return { encoding: reply.encoding, outcome };
  };
  /** An OTLP/gRPC message the listener left undecoded, as mapped() takes it; undefined when it came decoded. */
  const undecoded = (ctx: HandlerContext) => {
    const data = ctx.values.get(kUndecodedRequest);
    return data && { contentType: "application/x-protobuf", data, grpc: true };
  };
  const grpc = async (ctx: HandlerContext, kind: MappingJob["kind"], decoded: () => Promise<Outcome | undefined>) => {
    const body = undecoded(ctx);
    if (body === undefined) return decoded();
    const answer = await mapped(ctx, kind, body);
    if ("refused" in answer) throw grpcRefusal(answer.refused);
    return answer.outcome;
  };
  return {
    work,
    receive: {
      logs: (ctx, req) =>
        grpc(ctx, "logs", async () =>
          receiveDecoded(deps.db, req, mapLogs, await attributorFor(ctx, deps.db), now(), deps.logger),
        ),
      metrics: (ctx, req) =>
        grpc(ctx, "metrics", async () =>
          receiveDecoded(deps.db, req, mapMetrics, await attributorFor(ctx, deps.db), now(), deps.logger),
        ),
      traces: async (ctx) => {
        await grpc(ctx, "traces", async () => undefined);
      },
      http: (ctx, kind, body) => mapped(ctx, kind, { contentType: body.contentType, data: body.data }),
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
          return { partialSuccess: { rejectedLogRecords: BigInt(o?.rejected ?? 0), errorMessage: o?.message ?? "" } };
        }),
    },
    metrics: {
      export: (req, ctx) =>
        work(async () => {
          const o = await receive.metrics(ctx, req);
          return { partialSuccess: { rejectedDataPoints: BigInt(o?.rejected ?? 0), errorMessage: o?.message ?? "" } };
        }),
    },
    trace: {
      // Accepted, not stored: an exporter sending traces too keeps working, and says so.
      export: (_req, ctx) =>
        work(async () => {
          await receive.traces(ctx);
          return { partialSuccess: { rejectedSpans: 0n, errorMessage: TRACES_NOT_STORED } };
        }),
    },
  };
}

/** One HttpBody message of `data` in `contentType`. */
const body = (contentType: string, data: Uint8Array): HttpBody => create(HttpBodySchema, { contentType, data });

/**
 * An OTLP/HTTP answer: the Export*ServiceResponse in the request's encoding, or for a request
 * OTLP answers with an HTTP error (undecodable 400, too large 413, other content type 415) that
 * status in x-http-code (both edges turn it into the response status) and a google.rpc.Status.
 */
async function* httpExport<Res extends DescMessage>(
  ctx: HandlerContext,
  { work, receive }: ReturnType<typeof receivers>,
  kind: MappingJob["kind"],
  request: HttpBody,
  responseSchema: Res,
  respond: (outcome: Outcome | undefined) => MessageShape<Res>,
): AsyncGenerator<HttpBody> {
  const requested = encodingOf(request.contentType) ?? "protobuf";
  const answer = await work(() => receive.http(ctx, kind, request));
  if ("refused" in answer) {
    ctx.responseHeader.set("x-http-code", String(answer.refused.status));
    yield body(CONTENT_TYPES[requested], encodeStatus(answer.refused.message, requested));
    return;
  }
  const { encoding } = answer;
  yield body(CONTENT_TYPES[encoding], encodeMessage(responseSchema, respond(answer.outcome), encoding));
}

function httpService(shared: ReturnType<typeof receivers>): Partial<ServiceImpl<typeof OtlpHttpService>> {
  return {
    exportLogs: (req, ctx) =>
      httpExport(ctx, shared, "logs", req, ExportLogsServiceResponseSchema, (o) =>
        create(ExportLogsServiceResponseSchema, {
          partialSuccess: { rejectedLogRecords: BigInt(o?.rejected ?? 0), errorMessage: o?.message ?? "" },
        }),
      ),
    exportMetrics: (req, ctx) =>
      httpExport(ctx, shared, "metrics", req, ExportMetricsServiceResponseSchema, (o) =>
        create(ExportMetricsServiceResponseSchema, {
          partialSuccess: { rejectedDataPoints: BigInt(o?.rejected ?? 0), errorMessage: o?.message ?? "" },
        }),
      ),
    exportTraces: (req, ctx) =>
      httpExport(ctx, shared, "traces", req, ExportTraceServiceResponseSchema, () =>
        create(ExportTraceServiceResponseSchema, {
          partialSuccess: { rejectedSpans: 0n, errorMessage: TRACES_NOT_STORED },
        }),
      ),
  };
}
