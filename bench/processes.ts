// Child processes of the benchmark and what Linux says about them: free ports, waiting for a
// listener, CPU time and resident memory from /proc (peak RSS is the kernel's VmHWM, so a spike
// between two samples is never missed).
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { createServer, connect } from "node:net";
import { join } from "node:path";

/** A port nobody listens on right now (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Resolves once every port accepts connections; rejects if the child exits first or after timeoutMs. */
export async function waitForPorts(
  child: ChildProcess,
  ports: number[],
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}) before listening`);
    const up = await Promise.all(ports.map(canConnect));
    if (up.every(Boolean)) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${ports.join(", ")} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface Spawned {
  child: ChildProcess;
  /** Sends SIGTERM and waits for the exit (SIGKILL after graceMs). */
  stop(graceMs?: number): Promise<void>;
}

/** Starts a node process whose stdout and stderr go to logFile. */
export function spawnNode(args: string[], env: NodeJS.ProcessEnv, logFile: string, cwd: string): Spawned {
  const log = createWriteStream(logFile, { flags: "a" });
  const child = spawn(process.execPath, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    child,
    async stop(graceMs = 30_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
        await exited;
        clearTimeout(timer);
      }
      log.end();
    },
  };
}

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ on Linux

export interface ProcessSample {
  /** User + system CPU time in ms since the process started. */
  cpuMs: number;
  rssMb: number;
  /** Peak resident set since the process started (VmHWM). */
  peakRssMb: number;
}

/**
 * CPU time and memory of a process, or undefined when /proc does not have it (not Linux, exited).
 * `pid` may also name one thread of a process, as `PID/task/TID` (threadOf): its CPU alone.
 */
export async function sampleProcess(pid: number | string): Promise<ProcessSample | undefined> {
  try {
    const [stat, status] = await Promise.all([
      readFile(`/proc/${pid}/stat`, "utf8"),
      readFile(`/proc/${pid}/status`, "utf8"),
    ]);
    // Fields after the command name, which is parenthesised and may contain spaces.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
    return { cpuMs: (ticks * 1000) / CLOCK_TICKS_PER_SECOND, rssMb: kb("VmRSS") / 1024, peakRssMb: kb("VmHWM") / 1024 };
  } catch {
    return undefined;
  }
}

/** Busy and total CPU time of the whole machine in ms, from /proc/stat. */
export async function sampleMachine(): Promise<{ busyMs: number; totalMs: number } | undefined> {
  try {
    const line = (await readFile("/proc/stat", "utf8")).split("\n")[0]!;
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number) as number[];
    const busy = user! + nice! + system! + irq! + softirq! + steal!;
    const total = busy + idle! + iowait!;
    return { busyMs: (busy * 1000) / CLOCK_TICKS_PER_SECOND, totalMs: (total * 1000) / CLOCK_TICKS_PER_SECOND };
  } catch {
    return undefined;
  }
}

/** One thread of a process, for sampleProcess and cpuOf: the main thread's TID is the PID. */
export const threadOf = (pid: number, tid = pid) => `${pid}/task/${tid}`;

/** CPU time (ms) by pid (or threadOf), for processes that exist right now. */
export async function cpuOf(pids: Iterable<number | string>): Promise<Map<number | string, number>> {
  const out = new Map<number | string, number>();
  await Promise.all(
    [...pids].map(async (pid) => {
      const s = await sampleProcess(pid);
      if (s) out.set(pid, s.cpuMs);
    }),
  );
  return out;
}

/** CPU used between two cpuOf() samples; processes that appeared in between count from zero. */
export function cpuDelta(from: Map<number | string, number>, to: Map<number | string, number>): number {
  let ms = 0;
  for (const [pid, cpu] of to) ms += cpu - (from.get(pid) ?? 0);
  return ms;
}

/** Pids of processes whose command name is `comm` (e.g. "redis-server"). */
export async function pidsNamed(comm: string): Promise<number[]> {
  const entries = await readdir("/proc").catch(() => [] as string[]);
  const pids: number[] = [];
  await Promise.all(
    entries
      .filter((e) => /^\d+$/.test(e))
      .map(async (e) => {
        const name = await readFile(`/proc/${e}/comm`, "utf8").catch(() => "");
        if (name.trim() === comm) pids.push(Number(e));
      }),
  );
  return pids;
}

/** The compiled service (bench/build.ts) in a child process, on free ports, and where it listens. */
export interface CompiledService extends Spawned {
  restUrl: string;
  grpcUrl: string;
  internalGrpcUrl: string;
}

/**
 * Starts `node <buildDir>/services/cli/main.js serve` against `databaseUrl` with the OTLP
 * receiver's modules and the REST edge (SERVICES from `options.env`, else analytics, organization
 * and the edge), an in-process key-value store, no demo data and no background workers.
 * `options.nodeArgs` go to node before the script (--cpu-prof, say).
 */
export async function startCompiledService(
  buildDir: string,
  databaseUrl: string,
  logFile: string,
  cwd: string,
  options: { env?: Record<string, string>; nodeArgs?: string[] } = {},
): Promise<CompiledService> {
  const [rest, grpc, internal] = [await freePort(), await freePort(), await freePort()];
  const spawned = spawnNode(
    [...(options.nodeArgs ?? []), join(buildDir, "services/cli/main.js"), "serve"],
    {
      ...process.env,
      NODE_OPTIONS: "",
      DATABASE_URL: databaseUrl,
      REDIS_URL: "",
      HOST: "127.0.0.1",
      PORT: String(rest),
      GRPC_PORT: String(grpc),
      INTERNAL_GRPC_PORT: String(internal),
      SERVICES: "analytics,organization,edge",
      SEED_DEMO: "false",
      DEMO_RUNNER: "false",
      WORKERS: "false",
      LOG_LEVEL: "warn",
      ...options.env,
    },
    logFile,
    cwd,
  );
  try {
    await waitForPorts(spawned.child, [rest, grpc, internal], 120_000, "the compiled service");
  } catch (err) {
    await spawned.stop();
    throw err;
  }
  const url = (port: number) => `http://127.0.0.1:${port}`;
  return { ...spawned, restUrl: url(rest), grpcUrl: url(grpc), internalGrpcUrl: url(internal) };
}

/** CPU spent by groups of processes over a window, and the machine's busy and total time. */
export interface CpuSpent {
  /** ms of CPU by group (every thread of every process in it). */
  readonly ms: Record<string, number>;
  readonly busyMs: number;
  readonly totalMs: number;
}

/**
 * Opens a window over `groups` (each a name and how to list its processes now: Postgres starts
 * backends as clients connect, so they are listed again at the end); the function returned
 * closes it and says what each group and the machine spent in between.
 */
export async function cpuWindow(
  groups: Record<string, () => Promise<Array<number | string>>>,
): Promise<() => Promise<CpuSpent>> {
  const names = Object.keys(groups);
  const before = await Promise.all(names.map(async (name) => cpuOf(await groups[name]!())));
  const machineBefore = await sampleMachine();
  return async () => {
    const after = await Promise.all(names.map(async (name) => cpuOf(await groups[name]!())));
    const machineAfter = await sampleMachine();
    return {
      ms: Object.fromEntries(names.map((name, i) => [name, cpuDelta(before[i]!, after[i]!)])),
      busyMs: machineBefore && machineAfter ? machineAfter.busyMs - machineBefore.busyMs : 0,
      totalMs: machineBefore && machineAfter ? machineAfter.totalMs - machineBefore.totalMs : 0,
    };
  };
}

/** Two windows' spending together (a timed phase run in several parts). */
export function addSpent(a: CpuSpent, b: CpuSpent): CpuSpent {
  const ms = { ...a.ms };
  for (const [k, v] of Object.entries(b.ms)) ms[k] = (ms[k] ?? 0) + v;
  return { ms, busyMs: a.busyMs + b.busyMs, totalMs: a.totalMs + b.totalMs };
}

/** Nothing spent: what addSpent starts from. */
export const NO_CPU_SPENT: CpuSpent = { ms: {}, busyMs: 0, totalMs: 0 };
