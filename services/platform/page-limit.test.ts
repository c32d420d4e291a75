// One page-size rule and one set of texts for every list: the v0 lists' `limit` query string and
// the int32 `limit` of analytics /users and readiness reports.
import { describe, expect, it } from "vitest";
import { parsePageLimit } from "./cursors.js";

const problem = (raw: string | number) => {
  try {
    parsePageLimit(raw);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`expected ${JSON.stringify(raw)} to be refused`);
};

describe("parsePageLimit", () => {
  it("gives the default for an absent or empty limit and takes 1 to 100", () => {
    expect(parsePageLimit(undefined)).toBe(20);
    expect(parsePageLimit("")).toBe(20);
    expect(parsePageLimit("1")).toBe(1);
    expect(parsePageLimit("100")).toBe(100);
    expect(parsePageLimit(7)).toBe(7);
  });

  it("refuses everything else with one text, whether the limit came as text or as a number", () => {
    for (const raw of [0, "0"]) expect(problem(raw)).toBe("limit: must be an integer from 1 to 100, got 0");
    for (const raw of [-1, "-1"]) expect(problem(raw)).toBe("limit: must be an integer from 1 to 100, got -1");
    for (const raw of [101, "101"]) expect(problem(raw)).toBe("limit: must be an integer from 1 to 100, got 101");
    expect(problem("abc")).toBe('limit: must be an integer from 1 to 100, got "abc"');
    expect(problem("1.5")).toBe('limit: must be an integer from 1 to 100, got "1.5"');
    expect(problem(1.5)).toBe("limit: must be an integer from 1 to 100, got 1.5");
  });
});
