// One OTLP/HTTP body's decoding and mapping, as the mapping thread runs it (mapping-worker.ts)
// and as this thread runs it when no mapping thread can be started (mapping-pool.ts): the same
// function either way, with plain data in and out.
import type { OtlpEncoding } from "../../platform/otlp-http.js";
import { ExportLogsServiceRequestSchema } from "../../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import { ExportMetricsServiceRequestSchema } from "../../../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import { ExportTraceServiceRequestSchema } from "../../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { type MappedExport, mapLogs, mapMetrics, type OnNamed, type OnPart } from "./mapping.js";
import { decodeExport, OtlpHttpError } from "./wire.js";

export interface MappingJob {
  readonly kind: "logs" | "metrics" | "traces";
  readonly contentType: string;
  /** The raw body, gzip or not. */
  readonly data: Uint8Array;
  /** The credential's organization: event IDs include it. */
  readonly orgId: string;
}

export type MappingReply =
  /** Decoded; mapped unless it is traces (accepted and not stored). */
  | { encoding: OtlpEncoding; mapped?: MappedExport }
  /** A body OTLP answers with an HTTP error (400, 413, 415). */
  | { refused: { status: 400 | 413 | 415; message: string } }
  /** Anything else: a defect, answered as one. */
  | { failed: string };

/** `onNamed`, `onPart`: see mapLogs (the reply's mapped export then holds the last part). */
export async function mapHttpExport(job: MappingJob, onNamed?: OnNamed, onPart?: OnPart): Promise<MappingReply> {
  try {
    switch (job.kind) {
      case "logs": {
        const { message, encoding } = decodeExport(ExportLogsServiceRequestSchema, job.contentType, job.data);
        return { encoding, mapped: await mapLogs(message, job.orgId, onNamed, onPart) };
      }
      case "metrics": {
        const { message, encoding } = decodeExport(ExportMetricsServiceRequestSchema, job.contentType, job.data);
        return { encoding, mapped: await mapMetrics(message, job.orgId, onNamed, onPart) };
      }
      case "traces":
        return { encoding: decodeExport(ExportTraceServiceRequestSchema, job.contentType, job.data).encoding };
    }
  } catch (e) {
    if (e instanceof OtlpHttpError) return { refused: { status: e.status, message: e.message } };
    throw e;
  }
}
