// `npm run bench`: the request-path benchmark (issue 9, BENCHMARKS.md).
//
// 1. A scratch database on DATABASE_URL's server (else an embedded PGlite data directory) is
//    migrated and filled with the data set (storage.ts, dataset.ts).
// 2. The service starts as a child process as deployed: `agentplane serve` compiled to JavaScript
//    (build.ts; --from-source runs `node bin/agentplane.js serve` through tsx instead), every
//    module, Redis from REDIS_URL; beside it the bare floor handler (bare-server.ts, HTTP/1 and
//    HTTP/2) and, when split-get runs, the deployed shape: the edge alone (SERVICES=edge) calling
//    a services process (every module but the edge) over gRPC through EDGE_UPSTREAM_URL.
// 3. Every case answers one request correctly (cases.ts), then, round after round, each case is
//    driven by a fresh load-generator process (load.ts), once the servers are idle, while /proc
//    records the CPU time of the serving processes, their Postgres backends, Redis and the
//    machine: first saturated (closed loop), then, for reads, at a fixed rate of half the req/s
//    just measured, where latency is judged.
// 4. One table (report.ts): medians over rounds, ratios, peak RSS, targets.
//
// Rounds interleave the cases so that a burst of load from other work on the shared machine
// hits all of them alike rather than one; the spread of req/s over rounds is printed.
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { buildService } from "./build.js";
import { CASES, type BenchCase, type CaseContext, type ServerRole } from "./cases.js";
import type { LoadSpec } from "./load.js";
import { parseOptions, UsageError, USAGE, type BenchOptions } from "./options.js";
import {
  cpuDelta,
  cpuOf,
  freePort,
  pidsNamed,
  sampleMachine,
  sampleProcess,
  spawnNode,
  waitForPorts,
  type Spawned,
} from "./processes.js";
import { summarizeProfile, type ProfileWindow } from "./profile-summary.js";
import { aggregate, buildReport, formatReport, type Measurement } from "./report.js";
import { prepareStorage } from "./storage.js";
import type { LoadResult } from "./stats.js";
import { stallsWithin, type StallLine } from "./stalls.js";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));
const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

function analyticsRange(days: number): { startDate: string; endDate: string } {
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  return { startDate: day(today - days * 86_400_000), endDate: day(today - 86_400_000) };
}

interface Sample {
  /** performance.now() when taken. */
  at: number;
  /** Date.now() when taken: the clock of the servers' stall files. */
  wall: number;
  /** Each serving process of the case, in the case's order. */
  servers: Awaited<ReturnType<typeof sampleProcess>>[];
  machine: Awaited<ReturnType<typeof sampleMachine>>;
  /** CPU time of our Postgres backends and of Redis, by pid. */
  postgres: Map<number | string, number>;
  redis: Map<number | string, number>;
}

/** Where the serving side's own CPU goes besides the serving process. */
interface Backing {
  /** False for the embedded database, which runs inside the service process. */
  postgres: boolean;
  postgresPids(): Promise<number[]>;
  redisPids: number[];
}

/**
 * Runs one load-generator process. The server and the machine are sampled when the generator
 * says its measured period begins and again when its result arrives, so CPU figures cover the
 * same window as the request counts (not the generator's start-up or warm-up).
 */
function runLoad(
  spec: LoadSpec,
  sample: () => Promise<Sample>,
): Promise<{ result: LoadResult; from: Sample; to: Sample }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "bench/load.ts")], {
      cwd: ROOT,
      stdio: ["pipe", "pipe", "inherit"],
    });
    let buffered = "";
    let from: Promise<Sample> | undefined;
    let done: Promise<{ result: LoadResult; from: Sample; to: Sample }> | undefined;
    child.stdout.on("data", (d: Buffer) => {
      buffered += d.toString("utf8");
      let nl: number;
      while ((nl = buffered.indexOf("\n")) !== -1) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        const message = JSON.parse(line) as { event?: string } & LoadResult;
        if (message.event === "start") from = sample();
        else {
          const to = sample();
          done = Promise.all([from ?? to, to]).then(([f, t]) => ({ result: message, from: f, to: t }));
        }
      }
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0 || !done) return reject(new Error(`load generator exited with ${code} without a result`));
      done.then(resolvePromise, reject);
    });
    child.stdin.end(JSON.stringify(spec));
  });
}

/**
 * Waits until the serving processes and their Postgres backends have been idle (under 10% of a
 * core) for half a second: requests a previous case abandoned at its end, or a background job,
 * would otherwise be measured as part of the next case.
 */
async function settle(pids: () => Promise<number[]>, maxMs = 120_000): Promise<number> {
  const started = performance.now();
  let before = await cpuOf(await pids());
  for (;;) {
    await new Promise((r) => setTimeout(r, 500));
    const after = await cpuOf(await pids());
    if (cpuDelta(before, after) < 50 || performance.now() - started > maxMs) return performance.now() - started;
    before = after;
  }
}

/** The lines a serving process's stall probe wrote so far (none when it has not written yet). */
async function readStalls(file: string): Promise<StallLine[]> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as StallLine);
}

/** `rate`: offer that many requests per second; absent: closed loop (saturated). */
async function measure(
  c: BenchCase,
  ctx: CaseContext,
  options: BenchOptions,
  servers: Partial<Record<ServerRole, Spawned>>,
  backing: Backing,
  round: number,
  rate: number | undefined,
  load: Measurement["load"],
  stallFileOf: (role: ServerRole) => string,
): Promise<Measurement & { window: { from: number; to: number } }> {
  const pids = c.servers.map((role) => servers[role]!.child.pid!);
  const spec: LoadSpec = {
    target: c.target(ctx),
    connections: options.connections,
    ...(rate !== undefined ? { rate } : {}),
    warmupSeconds: options.warmupSeconds,
    durationSeconds: options.durationSeconds,
  };
  const sample = async (): Promise<Sample> => {
    const at = performance.now();
    const wall = Date.now();
    const [serverSamples, machine, postgres, redis] = await Promise.all([
      Promise.all(pids.map(sampleProcess)),
      sampleMachine(),
      backing.postgresPids().then(cpuOf),
      cpuOf(backing.redisPids),
    ]);
    return { at, wall, servers: serverSamples, machine, postgres, redis };
  };
  const { result, from, to } = await runLoad(spec, sample);
  const wallMs = Math.max(to.at - from.at, 1);
  const serverCpuMsByRole: Partial<Record<ServerRole, number>> = {};
  c.servers.forEach((role, i) => {
    serverCpuMsByRole[role] = (to.servers[i]?.cpuMs ?? NaN) - (from.servers[i]?.cpuMs ?? NaN);
  });
  const serverCpuMs = Object.values(serverCpuMsByRole).reduce((a, b) => a + b, 0);
  const postgresCpuMs = backing.postgres ? cpuDelta(from.postgres, to.postgres) : NaN;
  const redisCpuMs = cpuDelta(from.redis, to.redis);
  const machineBusyCores = ((to.machine?.busyMs ?? NaN) - (from.machine?.busyMs ?? NaN)) / wallMs;
  // The worst stall of any serving process of the case within the window (stall-probe.ts).
  const stalls = (await Promise.all(c.servers.map((role) => readStalls(stallFileOf(role)))))
    .map((lines) => stallsWithin(lines, from.wall, to.wall))
    .filter((s) => s !== undefined);
  // The load generator's CPU is over its own measured period, close to the sampled window.
  const ours = (serverCpuMs + (backing.postgres ? postgresCpuMs : 0) + redisCpuMs + result.clientCpuMs) / wallMs;
  return {
    ...result,
    caseId: c.id,
    round,
    load,
    ...(rate !== undefined ? { offeredRps: rate } : {}),
    serverCpuMs,
    serverCpuMsByRole,
    postgresCpuMs,
    redisCpuMs,
    machineBusyCores,
    otherBusyCores: Math.max(0, machineBusyCores - ours),
    peakRssMbAfter: (await sampleProcess(servers.service!.child.pid!))?.peakRssMb ?? NaN,
    serverLoopMaxMs: stalls.length ? Math.max(...stalls.map((s) => s.loopMaxMs)) : NaN,
    serverGcMaxMs: stalls.length ? Math.max(...stalls.map((s) => s.gcMaxMs)) : NaN,
    window: { from: from.at, to: to.at },
  };
}

const fixed = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");

/** Undo actions run once, newest first: at the end, on failure, or on Ctrl-C. */
const cleanups: (() => Promise<void>)[] = [];
let cleaning: Promise<void> | undefined;
function cleanUp(): Promise<void> {
  return (cleaning ??= (async () => {
    for (const undo of cleanups.reverse()) await undo().catch((err: unknown) => log(`clean-up failed: ${String(err)}`));
  })());
}

async function main() {
  const parsed = parseOptions(process.argv.slice(2));
  if (parsed === "help") return void process.stdout.write(`${USAGE}\n`);
  const options = parsed;
  const cases = options.cases.map((id) => CASES.find((c) => c.id === id)!);
  const workDir = await mkdtemp(join(tmpdir(), "agentplane-bench-"));
  cleanups.push(async () => {
    if (options.keep) log(`kept the logs in ${workDir}`);
    else if (options.cpuProf) log(`kept the profile in ${join(workDir, "profile")}`);
    else await rm(workDir, { recursive: true, force: true });
  });
  process.once("SIGINT", () => {
    log("interrupted: stopping the processes and dropping the scratch database");
    void cleanUp().then(() => process.exit(130));
  });
  const [load1, load5] = loadavg();
  log(
    `${cpus().length} CPUs, load average ${load1!.toFixed(2)} (1 min) ${load5!.toFixed(2)} (5 min); work directory ${workDir}`,
  );

  let buildDir: string | undefined;
  if (!options.fromSource) {
    const started = performance.now();
    buildDir = await buildService(ROOT);
    log(`compiled the service into ${buildDir} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  const { storage, dataset } = await prepareStorage(options, workDir);
  cleanups.push(async () => {
    await storage.close();
    if (options.keep) log(`kept: ${storage.description}`);
    else await storage.drop();
  });
  log(
    `storage: ${storage.description}; key-value store: ${process.env.REDIS_URL ? "Redis (REDIS_URL)" : "in-process"}`,
  );
  const [restPort, grpcPort, barePort, bareH2Port] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const profileDir = join(workDir, "profile");
  /** Each serving process appends its stalls to <its name>.stalls (a role's name is the role). */
  const stallFileOf = (name: string) => join(workDir, `${name}.stalls`);
  const stallProbe = buildDir
    ? ["--import", pathToFileURL(join(buildDir, "bench/stall-probe.js")).href]
    : ["--import", "tsx", "--import", pathToFileURL(join(ROOT, "bench/stall-probe.ts")).href];
  const serviceStarted = performance.now();
  /** `agentplane serve` as deployed, with these SERVICES and ports. */
  const serve = (name: string, env: Record<string, string>, profile: boolean) =>
    spawnNode(
      [
        ...stallProbe,
        ...(profile ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : []),
        ...(buildDir ? [join(buildDir, "services/cli/main.js")] : ["bin/agentplane.js"]),
        "serve",
      ],
      {
        ...process.env,
        ...storage.env,
        REDIS_URL: process.env.REDIS_URL ?? "",
        HOST: "127.0.0.1",
        INTERNAL_GRPC_PORT: "0",
        SEED_DEMO: "false",
        // The request paths only: started on this data set, the rollup schedule would first catch
        // up every day the data set's own rollup did not record as swept, a re-rollup of 90 days
        // running through the first cases.
        WORKERS: "false",
        LOG_LEVEL: options.logLevel,
        BENCH_STALL_FILE: stallFileOf(name),
        ...env,
      },
      join(workDir, `${name}.log`),
      ROOT,
    );
  const service = serve(
    "service",
    { PORT: String(restPort), GRPC_PORT: String(grpcPort), SERVICES: "all" },
    options.cpuProf,
  );
  cleanups.push(() => service.stop());
  const bare = spawnNode(
    [
      ...stallProbe,
      ...(buildDir ? [join(buildDir, "bench/bare-server.js")] : ["--import", "tsx", "bench/bare-server.ts"]),
    ],
    {
      ...process.env,
      ...storage.env,
      BENCH_STALL_FILE: stallFileOf("bare"),
      BARE_PORT: String(barePort),
      BARE_H2_PORT: String(bareH2Port),
      BARE_ORG_ID: dataset.orgId,
    },
    join(workDir, "bare.log"),
    ROOT,
  );
  cleanups.push(() => bare.stop());
  const servers: Partial<Record<ServerRole, Spawned>> = { service, bare };
  await waitForPorts(service.child, [restPort, grpcPort], 120_000, "the service");
  await waitForPorts(bare.child, [barePort, bareH2Port], 60_000, "the bare handler");

  // The deployed shape, only when a case goes through it: the services process (every module but
  // the edge) and the edge alone, which calls it over gRPC (EDGE_UPSTREAM_URL).
  const [splitRestPort, splitGrpcPort] = [await freePort(), await freePort()];
  if (cases.some((c) => c.servers.includes("split-edge"))) {
    const services = serve(
      "split-services",
      {
        PORT: "0",
        GRPC_PORT: String(splitGrpcPort),
        SERVICES: "organization,sessions,computers,readiness,analytics",
      },
      false,
    );
    cleanups.push(() => services.stop());
    await waitForPorts(services.child, [splitGrpcPort], 120_000, "the services process");
    const edge = serve(
      "split-edge",
      {
        PORT: String(splitRestPort),
        GRPC_PORT: String(await freePort()),
        SERVICES: "edge",
        EDGE_UPSTREAM_URL: `http://127.0.0.1:${splitGrpcPort}`,
      },
      false,
    );
    cleanups.push(() => edge.stop());
    await waitForPorts(edge.child, [splitRestPort], 120_000, "the edge process");
    servers["split-services"] = services;
    servers["split-edge"] = edge;
  }
  const ctx: CaseContext = {
    endpoints: {
      restUrl: `http://127.0.0.1:${restPort}`,
      grpcAddress: `127.0.0.1:${grpcPort}`,
      bareUrl: `http://127.0.0.1:${barePort}`,
      bareH2Url: `http://127.0.0.1:${bareH2Port}`,
      splitUrl: `http://127.0.0.1:${splitRestPort}`,
    },
    dataset,
    analyticsRange: analyticsRange(options.days),
    grpcChannels: options.grpcChannels,
  };
  for (const c of cases) await c.check(ctx);
  const halfLoad = options.rate === undefined && !options.saturatedOnly;
  log(
    `every case answered correctly; ${options.rounds} round(s) of ${cases.length} case(s), ${options.warmupSeconds} s warm-up + ${options.durationSeconds} s each, ${options.connections} connections` +
      (halfLoad ? "; each read again at 50% of its saturated req/s" : ""),
  );

  const backing: Backing = {
    postgres: storage.env.DATABASE_URL !== "",
    postgresPids: () => storage.backendPids(),
    // Redis is shared with whoever else uses it; on a quiet Redis its CPU is ours.
    redisPids: process.env.REDIS_URL ? await pidsNamed("redis-server") : [],
  };
  const measurements: Measurement[] = [];
  const windows = new Map<string, ProfileWindow[]>();
  const allPids = async () => [...Object.values(servers).map((s) => s.child.pid!), ...(await backing.postgresPids())];
  const run = async (c: BenchCase, round: number, rate: number | undefined, load: Measurement["load"]) => {
    const waited = await settle(allPids);
    if (waited > 2_000) log(`waited ${(waited / 1000).toFixed(1)} s for earlier work to finish before ${c.id}`);
    const { window, ...m } = await measure(c, ctx, options, servers, backing, round, rate, load, stallFileOf);
    measurements.push(m);
    // The profile is summarised over the saturated windows.
    if (load === "main")
      windows.set(c.id, [
        ...(windows.get(c.id) ?? []),
        { fromMs: window.from - serviceStarted, toMs: window.to - serviceStarted },
      ]);
    const offered = rate !== undefined ? ` at ${rate} req/s offered` : "";
    const cpuPerReq = (m.serverCpuMs * 1000) / Math.max(m.ok, 1);
    log(
      `round ${round} ${c.id}${offered}: ${fixed(m.rps, 0)} req/s, ` +
        `p50 ${fixed(m.p50, 2)} ms, p99 ${fixed(m.p99, 2)} ms, ${m.errors} errors` +
        (m.errors ? ` ${JSON.stringify(m.statuses)}` : "") +
        `; server CPU ${fixed(cpuPerReq, 0)} µs/req; machine busy ${fixed(m.machineBusyCores, 2)} cores, ` +
        `others ${fixed(m.otherBusyCores, 2)}; stalls: server loop ${fixed(m.serverLoopMaxMs, 1)} ms, ` +
        `GC ${fixed(m.serverGcMaxMs, 1)} ms, client loop ${fixed(m.clientLoopMaxMs, 1)} ms; ` +
        `service peak RSS so far ${fixed(m.peakRssMbAfter, 0)} MB`,
    );
    return m;
  };
  for (let round = 1; round <= options.rounds; round++) {
    for (const c of cases) {
      const m = await run(c, round, options.rate, "main");
      // Latency at a fixed load: half of what this path just did at saturation.
      if (halfLoad && c.read && m.rps >= 2) await run(c, round, Math.round(m.rps / 2), "half");
    }
  }
  const peakRssMb = (await sampleProcess(service.child.pid!))?.peakRssMb;
  for (const s of Object.values(servers).reverse()) await s.stop();

  const report = buildReport(cases, aggregate(cases, measurements), peakRssMb, options.rate);
  const [end1] = loadavg();
  process.stdout.write(
    `\nagentplane request-path benchmark — ${new Date().toISOString()}\n` +
      `${storage.description}; ${process.env.REDIS_URL ? "Redis" : "in-process key-value store"}; ${cpus().length} CPUs; ` +
      `${options.connections} connections${options.rate !== undefined ? ` offering ${options.rate} req/s` : ""}; ${options.rounds} × ${options.durationSeconds} s per case; service ${buildDir ? "compiled" : "from source (tsx)"}, LOG_LEVEL=${options.logLevel}\n` +
      `data set: ${dataset.users} users, ${dataset.sessions} sessions, ${dataset.messages} messages, ${dataset.events ?? "?"} telemetry events, ${options.days} days\n` +
      `load average ${load1!.toFixed(2)} at start, ${end1!.toFixed(2)} at end\n\n` +
      formatReport(report, options.rate) +
      "\n",
  );
  if (options.cpuProf) {
    // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread (the others are tsx's loader).
    const files = (await readdir(profileDir).catch(() => [])).filter((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f));
    for (const f of files) {
      for (const c of cases) {
        if (!c.servers.includes("service")) continue;
        const summary = await summarizeProfile(
          join(profileDir, f),
          // The profile names scripts by their real path (node_modules may be a symlink, in a worktree).
          [...(buildDir ? [buildDir, await realpath(buildDir)] : []), ROOT],
          25,
          windows.get(c.id) ?? [],
        );
        process.stdout.write(`\nCPU profile of the service during ${c.id} (${join(profileDir, f)}):\n${summary}\n`);
      }
    }
  }
  if (options.json)
    await writeFile(
      options.json,
      JSON.stringify(
        {
          options,
          dataset: { ...dataset, apiKey: undefined, sessionIds: dataset.sessionIds.length },
          measurements,
          report,
        },
        null,
        2,
      ),
    );
}

main().then(cleanUp, async (err: unknown) => {
  process.stderr.write(
    err instanceof UsageError ? `[bench] ${err.message}\n` : `[bench] failed: ${(err as Error).stack ?? String(err)}\n`,
  );
  await cleanUp();
  process.exit(1);
});
