// The one table `npm run bench` prints: per case the median over rounds, then the ratios the
// targets are stated in, memory, how busy the machine was, and each target met or missed.
import { PATH_CASES, type BenchCase, type ServerRole } from "./cases.js";
import { median, type LoadResult } from "./stats.js";

export interface Measurement extends LoadResult {
  caseId: string;
  round: number;
  /** "main": closed loop (saturated), or --rate; "half": a fixed rate of half the same round's saturated req/s. */
  load: "main" | "half";
  /** Requests per second offered, at a fixed rate. */
  offeredRps?: number;
  /** CPU time of the serving processes during the measured period (their sum). */
  serverCpuMs: number;
  /** The same by process, for a case served by more than one. */
  serverCpuMsByRole: Partial<Record<ServerRole, number>>;
  /** CPU time of the Postgres backends serving the scratch database, and of Redis. */
  postgresCpuMs: number;
  redisCpuMs: number;
  /** Whole-machine busy CPU during the period, in cores; and the part that is not this benchmark's (other work on the machine). */
  machineBusyCores: number;
  otherBusyCores: number;
  /** The service's peak RSS (VmHWM) once this measurement ended: shows which case raised it. */
  peakRssMbAfter: number;
  /** The longest event-loop delay and GC pause of any serving process in the period (stalls.ts). */
  serverLoopMaxMs: number;
  serverGcMaxMs: number;
}

/** A case at a fixed offered load: half of its saturated throughput. */
export interface FixedLoadFigures {
  offeredRps: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  serverCpuUsPerReq: number;
  otherBusyCores: number;
  /** Stalls in the period: the serving processes' longest event-loop delay and GC pause, the load generator's longest event-loop delay. */
  serverLoopMaxMs: number;
  serverGcMaxMs: number;
  clientLoopMaxMs: number;
}

export interface CaseFigures {
  caseId: string;
  label: string;
  servers: ServerRole[];
  rounds: number;
  rps: number;
  rpsMin: number;
  rpsMax: number;
  p50: number;
  p99: number;
  errors: number;
  serverCpuUsPerReq: number;
  serverCpuUsPerReqByRole: Partial<Record<ServerRole, number>>;
  postgresCpuUsPerReq: number;
  clientCpuUsPerReq: number;
  otherBusyCores: number;
  /** Medians over rounds at half the saturated throughput (absent with --rate, or when not run). */
  half?: FixedLoadFigures;
}

/** One path against the in-process edge. */
export interface Ratio {
  caseId: string;
  label: string;
  /** req/s ÷ the in-process edge's, at saturation. */
  throughput: number;
  /** Server CPU µs per request ÷ the in-process edge's, at saturation. */
  serverCpu: number;
  /** p99 at half of its own saturated throughput ÷ the edge's at half of its own. */
  p99AtHalf: number;
}

export interface Target {
  what: string;
  value: string;
  met: boolean | undefined;
}

export interface Report {
  figures: CaseFigures[];
  ratios: Ratio[];
  peakRssMb: number | undefined;
  targets: Target[];
}

const perRequestUs = (ms: Measurement[], cpuMs: (m: Measurement) => number): number => {
  const ok = ms.reduce((s, m) => s + m.ok, 0);
  return ok ? (ms.reduce((s, m) => s + cpuMs(m), 0) * 1000) / ok : NaN;
};

export function aggregate(cases: BenchCase[], measurements: Measurement[]): CaseFigures[] {
  return cases.map((c) => {
    const all = measurements.filter((m) => m.caseId === c.id);
    const ms = all.filter((m) => m.load === "main");
    const halves = all.filter((m) => m.load === "half");
    const byRole: Partial<Record<ServerRole, number>> = {};
    for (const role of c.servers) byRole[role] = perRequestUs(ms, (m) => m.serverCpuMsByRole[role] ?? NaN);
    return {
      caseId: c.id,
      label: c.label,
      servers: c.servers,
      rounds: ms.length,
      rps: median(ms.map((m) => m.rps)),
      rpsMin: Math.min(...ms.map((m) => m.rps)),
      rpsMax: Math.max(...ms.map((m) => m.rps)),
      p50: median(ms.map((m) => m.p50)),
      p99: median(ms.map((m) => m.p99)),
      errors: ms.reduce((s, m) => s + m.errors, 0),
      serverCpuUsPerReq: perRequestUs(ms, (m) => m.serverCpuMs),
      serverCpuUsPerReqByRole: byRole,
      postgresCpuUsPerReq: perRequestUs(ms, (m) => m.postgresCpuMs),
      clientCpuUsPerReq: perRequestUs(ms, (m) => m.clientCpuMs),
      otherBusyCores: median(ms.map((m) => m.otherBusyCores)),
      ...(halves.length
        ? {
            half: {
              offeredRps: median(halves.map((m) => m.offeredRps ?? NaN)),
              rps: median(halves.map((m) => m.rps)),
              p50: median(halves.map((m) => m.p50)),
              p99: median(halves.map((m) => m.p99)),
              errors: halves.reduce((s, m) => s + m.errors, 0),
              serverCpuUsPerReq: perRequestUs(halves, (m) => m.serverCpuMs),
              otherBusyCores: median(halves.map((m) => m.otherBusyCores)),
              serverLoopMaxMs: median(halves.map((m) => m.serverLoopMaxMs)),
              serverGcMaxMs: median(halves.map((m) => m.serverGcMaxMs)),
              clientLoopMaxMs: median(halves.map((m) => m.clientLoopMaxMs)),
            },
          }
        : {}),
    };
  });
}

export const P99_TARGET_MS = 25;
export const RSS_TARGET_MB = 300;

/**
 * `fixedRate`: every measurement was at that rate (--rate), so throughput says nothing and its
 * targets are skipped; the p99 target is then judged at that rate.
 */
export function buildReport(
  cases: BenchCase[],
  figures: CaseFigures[],
  peakRssMb: number | undefined,
  fixedRate?: number,
): Report {
  const by = (id: string) => figures.find((f) => f.caseId === id);
  const edge = by("edge-get");
  const ratios: Ratio[] = [];
  if (edge)
    for (const id of PATH_CASES) {
      const f = by(id);
      if (!f || f === edge) continue;
      ratios.push({
        caseId: id,
        label: f.label,
        throughput: f.rps / edge.rps,
        serverCpu: f.serverCpuUsPerReq / edge.serverCpuUsPerReq,
        p99AtHalf: (f.half?.p99 ?? NaN) / (edge.half?.p99 ?? NaN),
      });
    }
  const ratio = (id: string) => ratios.find((r) => r.caseId === id);
  const grpcGet = ratio("grpc-get");
  // The same calls from a raw node:http2 client: the server's side without grpc-js's client cost.
  const grpcH2Get = ratio("grpc-h2-get");
  const split = ratio("split-get");
  const bare = ratio("bare-get");
  const targets: Target[] = [];
  if (grpcGet)
    targets.push({
      what: "direct gRPC server CPU per request ≤ 1.2 × the in-process edge's (#19)",
      value: `${fmt(grpcGet.serverCpu, 2)} ×`,
      met: grpcGet.serverCpu <= 1.2,
    });
  if (grpcH2Get)
    targets.push({
      what: "direct gRPC (raw HTTP/2 client) server CPU per request ≤ 1.2 × the in-process edge's (#19)",
      value: `${fmt(grpcH2Get.serverCpu, 2)} ×`,
      met: grpcH2Get.serverCpu <= 1.2,
    });
  if (fixedRate === undefined) {
    if (grpcH2Get)
      targets.push({
        what: "direct gRPC (raw HTTP/2 client) throughput ≥ the in-process edge's (#19)",
        value: pct(grpcH2Get.throughput),
        met: grpcH2Get.throughput >= 1,
      });
    if (grpcGet)
      targets.push(
        {
          what: "direct gRPC throughput ≥ the in-process edge's (#19)",
          value: pct(grpcGet.throughput),
          met: grpcGet.throughput >= 1,
        },
        {
          what: "in-process edge throughput ≥ 70% of direct gRPC (issue 9)",
          value: pct(1 / grpcGet.throughput),
          met: 1 / grpcGet.throughput >= 0.7,
        },
      );
    if (split)
      targets.push({
        what: "split topology throughput ≥ 60% of the in-process edge's (#19)",
        value: pct(split.throughput),
        met: split.throughput >= 0.6,
      });
    if (bare)
      targets.push({
        what: "in-process edge throughput ≥ 50% of the bare HTTP/1 handler's (issue 9)",
        value: pct(1 / bare.throughput),
        met: 1 / bare.throughput >= 0.5,
      });
  }
  // Latency is judged at a fixed offered load, never at 64 saturating connections, where a
  // closed loop's mean latency is connections ÷ throughput (Little's law).
  for (const f of figures) {
    const c = cases.find((x) => x.id === f.caseId)!;
    if (!c.read || c.floor) continue;
    const p99 = fixedRate !== undefined ? f.p99 : f.half?.p99;
    if (p99 === undefined) continue;
    const at = fixedRate !== undefined ? `${fixedRate} req/s` : `50% load (${fmt(f.half!.offeredRps, 0)} req/s)`;
    targets.push({
      what: `p99 ≤ ${P99_TARGET_MS} ms at ${at}: ${f.label}`,
      value: `${fmt(p99, 1)} ms`,
      met: p99 <= P99_TARGET_MS,
    });
  }
  const errors = figures.reduce((s, f) => s + f.errors + (f.half?.errors ?? 0), 0);
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

const ROLE_NAMES: Record<ServerRole, string> = {
  service: "service",
  bare: "bare handler",
  "split-edge": "edge process",
  "split-services": "services process",
};

export function formatReport(report: Report, fixedRate?: number): string {
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
  const load = fixedRate !== undefined ? `offering ${fixedRate} req/s` : "saturated (closed loop)";
  const parts = [`${load}:\n\n${table(header, rows, [false, true, true, true, true, true, true, true, true, true])}`];
  const split = report.figures.filter((f) => f.servers.length > 1);
  if (split.length)
    parts.push(
      `server CPU µs/req by process:\n${split
        .map(
          (f) =>
            `  ${f.caseId}: ${f.servers
              .map((r) => `${ROLE_NAMES[r]} ${fmt(f.serverCpuUsPerReqByRole[r] ?? NaN, 0)}`)
              .join(" + ")} = ${fmt(f.serverCpuUsPerReq, 0)}`,
        )
        .join("\n")}`,
    );
  const halves = report.figures.filter((f) => f.half);
  if (halves.length)
    parts.push(
      `at a fixed load of 50% of each case's own saturated req/s (same round; medians over rounds):\n\n${table(
        [
          "case",
          "offered req/s",
          "req/s",
          "p50 ms",
          "p99 ms",
          "errors",
          "server CPU µs/req",
          "server loop max ms",
          "server GC max ms",
          "client loop max ms",
          "others' cores",
        ],
        halves.map((f) => [
          f.label,
          fmt(f.half!.offeredRps, 0),
          fmt(f.half!.rps, 0),
          fmt(f.half!.p50, 2),
          fmt(f.half!.p99, 2),
          String(f.half!.errors),
          fmt(f.half!.serverCpuUsPerReq, 0),
          fmt(f.half!.serverLoopMaxMs, 1),
          fmt(f.half!.serverGcMaxMs, 1),
          fmt(f.half!.clientLoopMaxMs, 1),
          fmt(f.half!.otherBusyCores, 2),
        ]),
        [false, true, true, true, true, true, true, true, true, true, true],
      )}\n\n(loop max: the longest event-loop delay of the serving processes, or of the load generator, in the period;\nGC max: the longest garbage-collection pause. A p99 near them is the process not running, not a queue.)`,
    );
  // At a fixed rate (--rate) every case does that rate, or less when it saturates: only CPU compares.
  if (report.ratios.length && fixedRate !== undefined)
    parts.push(
      table(
        ["÷ the in-process edge", "server CPU per request"],
        report.ratios.map((r) => [r.label, fmt(r.serverCpu, 2)]),
        [false, true],
      ),
    );
  else if (report.ratios.length)
    parts.push(
      table(
        ["÷ the in-process edge", "throughput", "server CPU per request", "p99 at 50% load"],
        report.ratios.map((r) => [r.label, pct(r.throughput), fmt(r.serverCpu, 2), fmt(r.p99AtHalf, 2)]),
        [false, true, true, true],
      ),
    );
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
