// Command-line options of `npm run bench`.
import { parseArgs } from "node:util";
import { CASES, DEFAULT_CASES } from "./cases.js";

export const USAGE = `usage: npm run bench -- [options]

  --quick              about two minutes: a small data set, 4 s per case and load, one round
  --rounds N           rounds over all cases; each figure is the median over rounds (default 3)
  --duration S         measured seconds per case and round (default 10)
  --warmup S           unmeasured seconds before each measurement (default 2)
  --connections N      concurrent connections / calls in flight (default 64)
  --rate N             offer N requests/s per case instead of as many as the service answers
                       (latency at a fixed load rather than at saturation); without it, each read
                       runs saturated and then at 50% of the req/s it just did, where p99 is judged
  --saturated-only     skip the 50% runs (half the time; no latency targets judged)
  --grpc-channels N    HTTP/2 connections the gRPC calls are spread over (default 4)
  --users N            demo users in the data set (default 200; quick 20)
  --days N             days of demo history (default 90)
  --cases a,b          cases to run (default ${DEFAULT_CASES.join(",")};
                       also: ${CASES.filter((c) => !DEFAULT_CASES.includes(c.id))
                         .map((c) => c.id)
                         .join(", ")})
  --log-level L        the service's LOG_LEVEL (default info, as deployed; its log goes to a file)
  --cpu-prof           run the service under --cpu-prof; the profile is summarised per case
  --from-source        run \`node bin/agentplane.js serve\` through tsx (as in development) instead
                       of the compiled build (as deployed; tsx adds ~100 MB of RSS)
  --json FILE          also write every figure as JSON
  --keep               keep the scratch database and the logs

Postgres and Redis come from DATABASE_URL and REDIS_URL (a scratch database is created on that
server and dropped at the end); without them the service uses the embedded PGlite database and
its in-process store.`;

/** A bad option: printed as one line, without a stack. */
export class UsageError extends Error {
  override name = "UsageError";
}

export interface BenchOptions {
  quick: boolean;
  rounds: number;
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  rate: number | undefined;
  saturatedOnly: boolean;
  grpcChannels: number;
  users: number;
  days: number;
  cases: string[];
  logLevel: string;
  cpuProf: boolean;
  fromSource: boolean;
  json: string | undefined;
  keep: boolean;
}

function int(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new UsageError(`--${name} must be an integer from ${min} to ${max}`);
  return n;
}

function parseOptionsArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      quick: { type: "boolean", default: false },
      rounds: { type: "string" },
      duration: { type: "string" },
      warmup: { type: "string" },
      connections: { type: "string" },
      rate: { type: "string" },
      "saturated-only": { type: "boolean", default: false },
      "grpc-channels": { type: "string" },
      users: { type: "string" },
      days: { type: "string" },
      cases: { type: "string" },
      "log-level": { type: "string" },
      "cpu-prof": { type: "boolean", default: false },
      "from-source": { type: "boolean", default: false },
      json: { type: "string" },
      keep: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
}

export function parseOptions(argv: string[]): BenchOptions | "help" {
  let parsed: ReturnType<typeof parseOptionsArgs>;
  try {
    parsed = parseOptionsArgs(argv);
  } catch (err) {
    throw new UsageError(`${(err as Error).message} (npm run bench -- --help lists the options)`);
  }
  const { values } = parsed;
  if (values.help) return "help";
  const quick = values.quick === true;
  const cases = values.cases
    ? values.cases
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean)
    : DEFAULT_CASES;
  for (const id of cases)
    if (!CASES.some((c) => c.id === id))
      throw new UsageError(`--cases: unknown case "${id}" (known: ${CASES.map((c) => c.id).join(", ")})`);
  return {
    quick,
    rounds: int("rounds", values.rounds, quick ? 1 : 3, 1, 50),
    durationSeconds: int("duration", values.duration, quick ? 4 : 10, 1, 600),
    warmupSeconds: int("warmup", values.warmup, quick ? 1 : 2, 0, 120),
    connections: int("connections", values.connections, 64, 1, 10_000),
    rate: values.rate === undefined ? undefined : int("rate", values.rate, 0, 1, 1_000_000),
    saturatedOnly: values["saturated-only"] === true,
    grpcChannels: int("grpc-channels", values["grpc-channels"], 4, 1, 1_000),
    users: int("users", values.users, quick ? 20 : 200, 1, 100_000),
    days: int("days", values.days, 90, 1, 366),
    cases,
    logLevel: values["log-level"] ?? "info",
    cpuProf: values["cpu-prof"] === true,
    fromSource: values["from-source"] === true,
    json: values.json,
    keep: values.keep === true,
  };
}
