// npm run fuzz [-- --runs N] [--seed S] [--all]
//
// Runs the bad-input property tests (test/reliability/fuzz-*.test.ts: the REST endpoints and the
// gRPC port's methods) with more cases than CI (default 10 000 per endpoint or method instead
// of 1 000), then prints the figures each measured: cases tried and the answers by status (REST)
// or by code (RPC). With --all it runs the whole reliability
// suite (isolation matrix, faults, secrets) and prints the fault figures too: that is how the
// numbers in RELIABILITY.md are produced. TEST_DATABASE_URL / TEST_REDIS_URL are passed on, as
// for any test run; without them the fault tests report themselves skipped.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

function option(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
}

const runs = option("runs") ?? process.env.FUZZ_RUNS ?? "10000";
if (!/^\d+$/.test(runs) || Number(runs) < 1) {
  process.stderr.write(`fuzz: --runs must be a positive integer, got "${runs}"\n`);
  process.exit(2);
}
const seed = option("seed");
const all = process.argv.includes("--all");
const reportDir = mkdtempSync(join(tmpdir(), "agentplane-reliability-"));

const started = Date.now();
const result = spawnSync("npx", ["vitest", "run", all ? "test/reliability/" : "test/reliability/fuzz-"], {
  stdio: "inherit",
  env: { ...process.env, FUZZ_RUNS: runs, ...(seed ? { FUZZ_SEED: seed } : {}), RELIABILITY_REPORT_DIR: reportDir },
});

interface Figures {
  name: string;
  cases?: number;
  byStatus?: Record<string, number>;
  seed?: number;
  [k: string]: unknown;
}
const figures: Figures[] = readdirSync(reportDir)
  .filter((f) => f.endsWith(".json"))
  .map((f) => JSON.parse(readFileSync(join(reportDir, f), "utf8")) as Figures)
  .sort((a, b) => a.name.localeCompare(b.name));
rmSync(reportDir, { recursive: true, force: true });

const fuzz = figures.filter((f) => f.name.startsWith("fuzz "));
const lines: string[] = [];
if (fuzz.length > 0) {
  lines.push("", "| endpoint | cases | answers by status | seed |", "|---|---:|---|---:|");
  for (const f of fuzz) {
    const statuses = Object.entries(f.byStatus ?? {})
      .map(([s, n]) => `${s}: ${n}`)
      .join(", ");
    lines.push(`| ${f.name.slice(5)} | ${f.cases} | ${statuses} | ${f.seed} |`);
  }
  const total = fuzz.reduce((n, f) => n + (f.cases ?? 0), 0);
  const fivexx = fuzz.reduce(
    (n, f) =>
      n +
      Object.entries(f.byStatus ?? {})
        .filter(([s]) => s.startsWith("5"))
        .reduce((m, [, c]) => m + c, 0),
    0,
  );
  lines.push(
    "",
    `${fuzz.length} endpoints, ${total} cases, ${fivexx} answers 5xx, ${Math.round((Date.now() - started) / 1000)} s.`,
  );
}
const rpc = figures.filter((f) => f.name.startsWith("rpc fuzz ") && f.name !== "rpc fuzz run");
if (rpc.length > 0) {
  lines.push("", "| method | cases | answers by code | seed |", "|---|---:|---|---:|");
  for (const f of rpc) {
    const codes = Object.entries((f.byCode as Record<string, number> | undefined) ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([s, n]) => `${s}: ${n}`)
      .join(", ");
    lines.push(`| ${f.name.slice(9)} | ${f.cases} | ${codes} | ${f.seed} |`);
  }
  const total = rpc.reduce((n, f) => n + (f.cases ?? 0), 0);
  lines.push("", `${rpc.length} methods, ${total} cases.`);
}
for (const f of figures.filter((x) => !x.name.startsWith("fuzz ") && !rpc.includes(x))) {
  const { name, ...rest } = f;
  lines.push(`${name}: ${JSON.stringify(rest)}`);
}
process.stdout.write(`${lines.join("\n")}\n`);
process.exit(result.status ?? 1);
