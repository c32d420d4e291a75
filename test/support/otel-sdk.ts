// The OpenTelemetry SDK as the OTLP tests drive it: exporters built under the environment Claude
// Code's documentation sets, a metric reader that collects when told, and exports awaited.
import type { LogRecordExporter, ReadableLogRecord } from "@opentelemetry/sdk-logs";
import {
  type AggregationTemporality,
  type InstrumentType,
  MetricReader,
  type PushMetricExporter,
  type ResourceMetrics,
} from "@opentelemetry/sdk-metrics";

/** A reader collecting on demand, with the temporality `select` gives each instrument. */
export class ManualReader extends MetricReader {
  constructor(select: (instrument: InstrumentType) => AggregationTemporality) {
    super({ aggregationTemporalitySelector: select });
  }
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/** `make()` with `env` set in process.env, as exporters read it when constructed; then restored. */
export function withEnv<T>(env: Record<string, string>, make: () => T): T {
  const saved = new Map(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return make();
  } finally {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

export function exportMetrics(exporter: PushMetricExporter, metrics: ResourceMetrics): Promise<void> {
  return new Promise((resolve, reject) =>
    exporter.export(metrics, (r) => (r.code === 0 ? resolve() : reject(r.error ?? new Error("export failed")))),
  );
}

export function exportLogs(exporter: LogRecordExporter, records: ReadableLogRecord[]): Promise<void> {
  return new Promise((resolve, reject) =>
    exporter.export(records, (r) => (r.code === 0 ? resolve() : reject(r.error ?? new Error("export failed")))),
  );
}
