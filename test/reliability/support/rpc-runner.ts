// Runs the generated requests of one RPC method against the server and checks every answer
// against the invariants; collects figures for RELIABILITY.md. FUZZ_RUNS sets the cases per
// method (default 1000, the CI figure; `npm run fuzz` raises it), FUZZ_SEED replays a run.
import fc from "fast-check";
import { recordFigures } from "./figures.js";
import { FUZZ_RUNS } from "./fuzz-runner.js";
import { H2Client, type H2Response } from "./raw-h2.js";
import { rpcId, rpcUrlFor, type RpcEndpoints, type RpcMethod } from "./rpc-catalog.js";
import { rpcCases, type CaseContext, type RpcCase } from "./rpc-cases.js";
import { answerLabel, problemsWith } from "./rpc-invariants.js";

const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
/** Longest wait for an answer; past it the call hangs. */
export const CALL_TIMEOUT_MS = 15_000;

export interface RpcFigures {
  method: string;
  cases: number;
  /** Answers by code ("OK", "INVALID_ARGUMENT", "HTTP 415", "RST_STREAM 1"), both protocols. */
  byCode: Record<string, number>;
  byProtocol: Record<string, number>;
  slowestMs: number;
  seed: number | undefined;
}

function describeCase(c: RpcCase, res: H2Response | undefined, problems: string[]): string {
  const headers = Object.fromEntries(
    Object.entries(c.request.headers).map(([k, v]) => [
      k,
      k === "authorization"
        ? "<redacted>"
        : String(v).length > 100
          ? `${String(v).slice(0, 100)}… (${String(v).length} chars)`
          : v,
    ]),
  );
  const body = Buffer.concat(c.request.body);
  return [
    problems.join("; "),
    `request: ${c.request.method ?? "POST"} ${c.request.path} (${c.protocol})`,
    `headers: ${JSON.stringify(headers)}`,
    `body: ${body.length > 400 ? `${body.subarray(0, 400).toString("hex")}… (${body.length} bytes)` : c.protocol === "connect" && !c.request.headers["content-type"]?.toString().includes("proto") ? JSON.stringify(body.toString("utf8")) : body.toString("hex")}`,
    `expected: ${c.expected} [${c.labels.join(" ")}]`,
    res
      ? `answer: ${res.status} ${JSON.stringify(res.headers)} ${JSON.stringify(res.trailers)} ${res.body.subarray(0, 400).toString("utf8")}${res.resetCode !== undefined ? ` reset ${res.resetCode}` : ""}`
      : "answer: none",
  ].join("\n  ");
}

export interface FuzzMethodOptions {
  runs?: number;
}

export async function fuzzMethod(
  endpoints: RpcEndpoints,
  m: RpcMethod,
  ctx: CaseContext,
  options: FuzzMethodOptions = {},
): Promise<RpcFigures> {
  const numRuns = options.runs ?? FUZZ_RUNS;
  const figures: RpcFigures = { method: rpcId(m), cases: 0, byCode: {}, byProtocol: {}, slowestMs: 0, seed: SEED };
  const url = rpcUrlFor(endpoints, m.service);
  const client = new H2Client(url);
  try {
    const result = await fc.check(
      fc.asyncProperty(rpcCases(m, ctx), async (c) => {
        if (process.env.DEBUG_FUZZ) process.stdout.write(`CASE ${c.request.path} [${c.labels.join(" ")}]\n`);
        let res: H2Response;
        try {
          if (c.isolated) {
            const own = new H2Client(url);
            try {
              res = await own.request(c.request, CALL_TIMEOUT_MS);
            } finally {
              own.close();
            }
          } else res = await client.request(c.request, CALL_TIMEOUT_MS);
        } catch (e) {
          throw new Error(describeCase(c, undefined, [`no answer: ${(e as Error).message}`]));
        }
        const { answer, problems } = problemsWith(c, res, m.method);
        const label = answerLabel(answer);
        figures.cases++;
        figures.byCode[label] = (figures.byCode[label] ?? 0) + 1;
        figures.byProtocol[c.protocol] = (figures.byProtocol[c.protocol] ?? 0) + 1;
        figures.slowestMs = Math.max(figures.slowestMs, Math.round(res.ms));
        if (problems.length > 0) throw new Error(describeCase(c, res, problems));
      }),
      { numRuns, seed: SEED, endOnFailure: true, markInterruptAsFailure: true, interruptAfterTimeLimit: 20 * 60_000 },
    );
    if (result.failed) {
      const counterexample =
        result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance);
      throw new Error(`${rpcId(m)}: ${counterexample}\n  (seed ${result.seed}; rerun with FUZZ_SEED=${result.seed})`);
    }
    figures.seed = result.seed;
  } finally {
    client.close();
  }
  recordFigures(`rpc fuzz ${rpcId(m)}`, { ...figures });
  return figures;
}
