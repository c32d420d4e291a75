// The one table `npm run bench` prints: per case the median over rounds, then the ratios the
// targets are stated in, memory, how busy the machine was, and each target met or missed.
import type { BenchCase } from "./cases.js";
import { median, type LoadResult } from "./stats.js";

export interface Measurement extends LoadResult {
  caseId: string;
  round: number;
  /** CPU time of the serving process during the measured period. */
  serverCpuMs: number;
  /** CPU time of the Postgres backends serving the scratch database, and of Redis. */
  postgresCpuMs: number;
  redisCpuMs: number;
  /** Whole-machine busy CPU during the period, in cores; and the part that is not this benchmark's (other work on the machine). */
  machineBusyCores: number;
  otherBusyCores: number;
  /** The service's peak RSS (VmHWM) once this measurement ended: shows which case raised it. */
  peakRssMbAfter: number;
}

export interface CaseFigures {
  caseId: string;
  label: string;
  rounds: number;
  rps: number;
  rpsMin: number;
  rpsMax: number;
  p50: number;
  p99: number;
  errors: number;
  serverCpuUsPerReq: number;
  postgresCpuUsPerReq: number;
  clientCpuUsPerReq: number;
  otherBusyCores: number;
}

export interface Ratios {
  edgeOverGrpcRps: number;
  edgeOverBareRps: number;
  edgeOverGrpcP99: number;
  edgeOverBareP99: number;
  edgeOverGrpcCpu: number;
  edgeOverBareCpu: number;
}

export interface Target {
  what: string;
  value: string;
  met: boolean | undefined;
}

export interface Report {
  figures: CaseFigures[];
  ratios: Partial<Ratios>;
  peakRssMb: number | undefined;
  targets: Target[];
}

export function aggregate(cases: BenchCase[], measurements: Measurement[]): CaseFigures[] {
  return cases.map((c) => {
    const ms = measurements.filter((m) => m.caseId === c.id);
    const ok = ms.reduce((s, m) => s + m.ok, 0);
    return {
      caseId: c.id,
      label: c.label,
      rounds: ms.length,
      rps: median(ms.map((m) => m.rps)),
      rpsMin: Math.min(...ms.map((m) => m.rps)),
      rpsMax: Math.max(...ms.map((m) => m.rps)),
      p50: median(ms.map((m) => m.p50)),
      p99: median(ms.map((m) => m.p99)),
      errors: ms.reduce((s, m) => s + m.errors, 0),
      serverCpuUsPerReq: ok ? (ms.reduce((s, m) => s + m.serverCpuMs, 0) * 1000) / ok : NaN,
      postgresCpuUsPerReq: ok ? (ms.reduce((s, m) => s + m.postgresCpuMs, 0) * 1000) / ok : NaN,
      clientCpuUsPerReq: ok ? (ms.reduce((s, m) => s + m.clientCpuMs, 0) * 1000) / ok : NaN,
      otherBusyCores: median(ms.map((m) => m.otherBusyCores)),
    };
  });
}

export const P99_TARGET_MS = 25;
export const RSS_TARGET_MB = 300;

/** `fixedRate`: the load was a fixed rate (--rate), so throughput says nothing and its targets are skipped. */
export function buildReport(
  cases: BenchCase[],
  figures: CaseFigures[],
  peakRssMb: number | undefined,
  fixedRate?: number,
): Report {
  const by = (id: string) => figures.find((f) => f.caseId === id);
  const edge = by("edge-get");
  const grpcGet = by("grpc-get");
  const bare = by("bare-get");
  const ratios: Partial<Ratios> = {};
  if (edge && grpcGet) {
    ratios.edgeOverGrpcRps = edge.rps / grpcGet.rps;
    ratios.edgeOverGrpcP99 = edge.p99 / grpcGet.p99;
    ratios.edgeOverGrpcCpu = edge.serverCpuUsPerReq / grpcGet.serverCpuUsPerReq;
  }
  if (edge && bare) {
    ratios.edgeOverBareRps = edge.rps / bare.rps;
    ratios.edgeOverBareP99 = edge.p99 / bare.p99;
    ratios.edgeOverBareCpu = edge.serverCpuUsPerReq / bare.serverCpuUsPerReq;
  }
  const targets: Target[] = [];
  if (ratios.edgeOverGrpcRps !== undefined && fixedRate === undefined)
    targets.push({
      what: "edge throughput ≥ 70% of direct gRPC",
      value: pct(ratios.edgeOverGrpcRps),
      met: ratios.edgeOverGrpcRps >= 0.7,
    });
  if (ratios.edgeOverBareRps !== undefined && fixedRate === undefined)
    targets.push({
      what: "edge throughput ≥ 50% of the bare handler",
      value: pct(ratios.edgeOverBareRps),
      met: ratios.edgeOverBareRps >= 0.5,
    });
  for (const f of figures) {
    const c = cases.find((x) => x.id === f.caseId)!;
    if (c.read && c.server === "service")
      targets.push({
        what: `p99 ≤ ${P99_TARGET_MS} ms: ${f.label}`,
        value: `${fmt(f.p99, 1)} ms`,
        met: f.p99 <= P99_TARGET_MS,
      });
  }
  const errors = figures.reduce((s, f) => s + f.errors, 0);
  targets.push({ what: "zero errors", value: String(errors), met: errors === 0 });
  targets.push({
    what: `peak RSS of the service ≤ ${RSS_TARGET_MB} MB`,
    value: peakRssMb === undefined ? "n/a" : `${fmt(peakRssMb, 0)} MB`,
    met: peakRssMb === undefined ? undefined : peakRssMb <= RSS_TARGET_MB,
  });
  return { figures, ratios, peakRssMb, targets };
}

function fmt(n: number, digits: number): string {
  return Number.isFinite(n) ? n.toFixed(digits) : "n/a";
}

function pct(n: number): string {
  return Number.isFinite(n) ? `${(n * 100).toFixed(0)}%` : "n/a";
}

function table(header: string[], rows: string[][], rightAlign: boolean[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (rightAlign[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (rightAlign[i] ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2))).join("|")}|`;
  return [line(header), rule, ...rows.map(line)].join("\n");
}

export function formatReport(report: Report): string {
  const header = [
    "case",
    "req/s",
    "req/s range",
    "p50 ms",
    "p99 ms",
    "errors",
    "server CPU µs/req",
    "Postgres CPU µs/req",
    "client CPU µs/req",
    "others' cores",
  ];
  const rows = report.figures.map((f) => [
    f.label,
    fmt(f.rps, 0),
    f.rounds > 1 ? `${fmt(f.rpsMin, 0)}–${fmt(f.rpsMax, 0)}` : "",
    fmt(f.p50, 2),
    fmt(f.p99, 2),
    String(f.errors),
    fmt(f.serverCpuUsPerReq, 0),
    fmt(f.postgresCpuUsPerReq, 0),
    fmt(f.clientCpuUsPerReq, 0),
    fmt(f.otherBusyCores, 2),
  ]);
  const r = report.ratios;
  const ratioRows: string[][] = [];
  if (r.edgeOverGrpcRps !== undefined)
    ratioRows.push([
      "edge ÷ direct gRPC",
      pct(r.edgeOverGrpcRps),
      fmt(r.edgeOverGrpcP99!, 2),
      fmt(r.edgeOverGrpcCpu!, 2),
    ]);
  if (r.edgeOverBareRps !== undefined)
    ratioRows.push([
      "edge ÷ bare handler",
      pct(r.edgeOverBareRps),
      fmt(r.edgeOverBareP99!, 2),
      fmt(r.edgeOverBareCpu!, 2),
    ]);
  const parts = [table(header, rows, [false, true, true, true, true, true, true, true, true, true])];
  if (ratioRows.length)
    parts.push(table(["ratio", "throughput", "p99", "server CPU per request"], ratioRows, [false, true, true, true]));
  parts.push(
    `peak RSS of the service process: ${report.peakRssMb === undefined ? "n/a" : `${fmt(report.peakRssMb, 0)} MB`}`,
  );
  parts.push(
    table(
      ["target", "measured", ""],
      report.targets.map((t) => [t.what, t.value, t.met === undefined ? "?" : t.met ? "met" : "MISSED"]),
      [false, true, false],
    ),
  );
  return parts.join("\n\n");
}
