// Figures from raw per-response latencies, computed the same way for every case.
import type { StallFigures } from "./stalls.js";

export interface LoadResult {
  /** Successful responses per second over the measured period. */
  rps: number;
  ok: number;
  errors: number;
  /** Response count by HTTP status or gRPC code (and connection errors). */
  statuses: Record<string, number>;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  elapsedMs: number;
  /** CPU time the load generator itself used during the measured period. */
  clientCpuMs: number;
  /** The load generator's own longest event-loop delay and GC pause in the period (stalls.ts), ms. */
  clientLoopMaxMs: number;
  clientGcMaxMs: number;
}

/** The nearest-rank percentile of an ascending array (p in 0..1). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
}

export function summarize(
  latencies: number[],
  errors: number,
  statuses: Record<string, number>,
  elapsedMs: number,
  clientCpuMs: number,
  stalls: StallFigures,
): LoadResult {
  const sorted = Float64Array.from(latencies).sort();
  return {
    rps: (latencies.length * 1000) / elapsedMs,
    ok: latencies.length,
    errors,
    statuses,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
    elapsedMs,
    clientCpuMs,
    clientLoopMaxMs: stalls.loopMaxMs,
    clientGcMaxMs: stalls.gcMaxMs,
  };
}

export function median(values: number[]): number {
  const finite = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (finite.length === 0) return NaN;
  const mid = finite.length >> 1;
  return finite.length % 2 ? finite[mid]! : (finite[mid - 1]! + finite[mid]!) / 2;
}
