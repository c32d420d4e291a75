// One OTLP export's decoding and mapping, an OTLP/HTTP body or an OTLP/gRPC message the gRPC
// listener left undecoded (platform/undecoded.ts), as the mapping thread runs it
// (mapping-worker.ts) and as this thread runs it when no mapping thread can be started
// (mapping-pool.ts): the same function either way, with plain data in and out.
import type { OtlpEncoding } from "../../platform/otlp-http.js";
import { ExportLogsServiceRequestSchema } from "../../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import { ExportMetricsServiceRequestSchema } from "../../../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import { ExportTraceServiceRequestSchema } from "../../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import type { DecodeBudget } from "./decode-budget.js";
import { type MappedExport, mapLogs, mapMetrics, type OnNamed, type OnPart } from "./mapping.js";
import { decodeExport, OtlpHttpError } from "./wire.js";

export interface MappingJob {
  readonly kind: "logs" | "metrics" | "traces";
  readonly contentType: string;
  /** The raw body, gzip or not; an OTLP/gRPC message as the listener decompressed it. */
  readonly data: Uint8Array;
  /** An OTLP/gRPC message (wire.ts DecodeOptions.grpc), whose contentType is protobuf's. */
  readonly grpc?: boolean;
  /** The credential's organization: event IDs include it. */
  readonly orgId: string;
}

export type MappingReply =
  /** Decoded; mapped unless it is traces (accepted and not stored). */
  | { encoding: OtlpEncoding; mapped?: MappedExport }
  /** A body OTLP answers with an HTTP error (400, 413, 415); over gRPC, INVALID_ARGUMENT and so on. */
  | { refused: { status: 400 | 413 | 415; message: string } }
  /** Not decoded: the process's decode budget is spent (an OTLP 503 with Retry-After). */
  | { busy: string }
  /** Anything else: a defect, answered as one. */
  | { failed: string };

/**
 * Retry-After of every export the receiver turns away for now (busy, its decode budget spent, its
 * mapping thread gone): one export's work is milliseconds to a few seconds.
 */
export const RETRY_AFTER_SECONDS = 1;

/** The decode budget was spent when the body came: it was not decoded. */
class BudgetSpent extends Error {}

/**
 * `onNamed`, `onPart`: see mapLogs (the reply's mapped export then holds the last part).
 * `budget`: the process's decode budget, whose bytes the body holds from its decoding to the end
 * of its mapping.
 */
export async function mapHttpExport(
  job: MappingJob,
  onNamed?: OnNamed,
  onPart?: OnPart,
  budget?: DecodeBudget,
): Promise<MappingReply> {
  let taken = 0;
  const admit = (bytes: number) => {
    if (budget === undefined) return;
    if (!budget.take(bytes)) throw new BudgetSpent();
    taken = bytes;
  };
  const options = { admit, grpc: job.grpc === true };
  try {
    switch (job.kind) {
      case "logs": {
        const { message, encoding } = decodeExport(ExportLogsServiceRequestSchema, job.contentType, job.data, options);
        return { encoding, mapped: await mapLogs(message, job.orgId, onNamed, onPart) };
      }
      case "metrics": {
        const decoded = decodeExport(ExportMetricsServiceRequestSchema, job.contentType, job.data, options);
        return { encoding: decoded.encoding, mapped: await mapMetrics(decoded.message, job.orgId, onNamed, onPart) };
      }
      case "traces":
        return { encoding: decodeExport(ExportTraceServiceRequestSchema, job.contentType, job.data, options).encoding };
      default:
        throw new Error(`no such kind of export: ${job.kind satisfies never}`);
    }
  } catch (e) {
    if (e instanceof OtlpHttpError) return { refused: { status: e.status, message: e.message } };
    if (e instanceof BudgetSpent)
      return {
        busy: `the OTLP receiver is decoding as many bytes of exports as it holds at once (${budget!.limit}); retry after ${RETRY_AFTER_SECONDS} s`,
      };
    throw e;
  } finally {
    if (taken > 0) budget!.give(taken);
  }
}
