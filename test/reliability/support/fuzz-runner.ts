// Runs the generated requests of one endpoint against a server and checks every answer against
// the invariants; collects figures for RELIABILITY.md. FUZZ_RUNS sets the cases per endpoint
// (default 1000, the CI figure; `npm run fuzz` raises it), FUZZ_SEED replays a failing run, and
// the figures go to support/figures.ts.
import fc from "fast-check";
import { fuzzCases, withFreshValues, type FuzzCase } from "./fuzz-cases.js";
import { id, methodsOf, type Endpoint } from "./endpoints.js";
import { problemsWith, unnamedField, untilFirstChunk } from "./invariants.js";
import { recordFigures } from "./figures.js";
import { send, type RawResponse } from "./raw-http.js";

export const FUZZ_RUNS = Number(process.env.FUZZ_RUNS ?? 1000);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

export interface FuzzFigures {
  endpoint: string;
  cases: number;
  byStatus: Record<string, number>;
  byExpectation: Record<string, number>;
  slowestMs: number;
  /** 400s to a case with one invalid parameter, each checked to name it. */
  fieldNamed: number;
  seed: number | undefined;
}

function describe(c: FuzzCase, res: RawResponse | undefined, problems: string[]): string {
  const body =
    c.body === undefined
      ? ""
      : Buffer.isBuffer(c.body)
        ? `<${c.body.length} bytes>`
        : c.body.length > 300
          ? `${c.body.slice(0, 300)}… (${c.body.length} chars)`
          : c.body;
  return [
    `${problems.join("; ")}`,
    `request: ${c.method} ${c.target.length > 300 ? `${c.target.slice(0, 300)}… (${c.target.length} chars)` : c.target}`,
    `headers: ${JSON.stringify({ ...c.headers, authorization: "<redacted>" })}`,
    `body: ${body}`,
    `expected: ${c.expected} [${c.labels.join(" ")}]`,
    res ? `answer: ${res.status} ${res.text.slice(0, 500)}` : "answer: none",
  ].join("\n  ");
}

export async function fuzzEndpoint(
  baseUrl: string,
  endpoint: Endpoint,
  all: readonly Endpoint[],
  key: string,
  numRuns = FUZZ_RUNS,
): Promise<FuzzFigures> {
  const figures: FuzzFigures = {
    endpoint: id(endpoint),
    cases: 0,
    byStatus: {},
    byExpectation: {},
    slowestMs: 0,
    fieldNamed: 0,
    seed: SEED,
  };
  const arbitrary = fuzzCases(endpoint, methodsOf(all, endpoint.template), key);
  const result = await fc.check(
    fc.asyncProperty(arbitrary, async (c) => {
      if (process.env.DEBUG_FUZZ)
        process.stdout.write(
          `CASE ${c.method} ${c.target.slice(0, 120)} ${JSON.stringify(c.headers).slice(0, 200)} [${c.labels.join(" ")}]\n`,
        );
      let res: RawResponse | undefined;
      try {
        c = await withFreshValues(c);
      } catch (e) {
        throw new Error(describe(c, undefined, [`making a fresh value failed: ${(e as Error).message}`]));
      }
      try {
        // A streamed answer is read to its first chunk; the client then leaves (closes the socket).
        res = await send(baseUrl, endpoint.stream ? { ...c, until: untilFirstChunk(endpoint.stream) } : c);
      } catch (e) {
        throw new Error(describe(c, undefined, [`no answer: ${(e as Error).message}`]));
      }
      figures.cases++;
      figures.byStatus[res.status] = (figures.byStatus[res.status] ?? 0) + 1;
      figures.byExpectation[c.expected] = (figures.byExpectation[c.expected] ?? 0) + 1;
      figures.slowestMs = Math.max(figures.slowestMs, Math.round(res.ms));
      const problems = c.otherRoute
        ? problemsWith(res, c.expected, () => undefined, c.method)
        : problemsWith(res, c.expected, endpoint.shape, c.method, endpoint.ok, endpoint.stream, endpoint.otlp);
      if (c.blame !== undefined && res.status === 400) {
        figures.fieldNamed++;
        const unnamed = unnamedField(res, c.blame);
        if (unnamed) problems.push(unnamed);
      }
      if (problems.length > 0) throw new Error(describe(c, res, problems));
    }),
    { numRuns, seed: SEED, endOnFailure: false, markInterruptAsFailure: true, interruptAfterTimeLimit: 20 * 60_000 },
  );
  if (result.failed) {
    const counterexample =
      result.errorInstance instanceof Error ? result.errorInstance.message : String(result.errorInstance);
    throw new Error(
      `${id(endpoint)}: ${counterexample}\n  (seed ${result.seed}, path ${result.counterexamplePath}; rerun with FUZZ_SEED=${result.seed})`,
    );
  }
  figures.seed = result.seed;
  recordFigures(`fuzz ${id(endpoint)}`, { ...figures });
  return figures;
}
