// The body of every fuzz file: one server and seeded organization for the file, then FUZZ_RUNS
// generated requests per endpoint, each answered by a correct 2xx or a 4xx with the error body;
// never a 5xx, a hang or a stack trace (support/fuzz-cases.ts says what is generated).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { id } from "./endpoints.js";
import { startFuzzTarget, type FuzzTarget } from "./fuzz-setup.js";
import { FUZZ_RUNS, fuzzEndpoint } from "./fuzz-runner.js";

export function defineFuzzSuite(title: string, names: readonly string[]): void {
  describe(title, () => {
    let target: FuzzTarget;
    beforeAll(async () => {
      target = await startFuzzTarget();
    }, 180_000);
    afterAll(() => target?.close());

    for (const name of names) {
      it(`${name}: ${FUZZ_RUNS} generated requests, every answer a correct 2xx or a 4xx error body`, async () => {
        const endpoint = target.all.find((e) => id(e) === name);
        expect(endpoint, name).toBeDefined();
        const figures = await fuzzEndpoint(target.server.restUrl, endpoint!, target.all, target.org.members.owner.key);
        expect(figures.cases).toBeGreaterThanOrEqual(FUZZ_RUNS);
        // The generator reaches both sides: valid requests succeed, broken ones are refused
        // (checked when the run is large enough to be sure of it).
        const ok = Object.entries(figures.byStatus)
          .filter(([s]) => s.startsWith("2"))
          .reduce((n, [, c]) => n + c, 0);
        if (FUZZ_RUNS >= 200) {
          expect(ok, "answers that succeeded").toBeGreaterThan(0);
          expect(figures.cases - ok, "answers that refused").toBeGreaterThan(0);
        }
        // Afterwards the server still answers a plain valid request.
        const health = await fetch(`${target.server.restUrl}/api/v0/organization/users?limit=1`, {
          headers: { authorization: `Bearer ${target.org.members.owner.key}` },
        });
        expect(health.status).toBe(200);
      }, 900_000);
    }
  });
}
