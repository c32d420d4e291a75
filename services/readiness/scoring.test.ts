import { describe, expect, it } from "vitest";
import { changesSince, overallScore } from "./scoring.js";

const c = (numerator: number, denominator: number) => ({ numerator, denominator, rationale: "" });

describe("overallScore", () => {
  it("is passing sub-applications over evaluated ones across criteria", () => {
    expect(overallScore({ a: c(1, 1), b: c(1, 3) })).toBe(0.5);
    expect(overallScore({ a: c(0, 2) })).toBe(0);
    expect(overallScore({ a: c(2, 2), b: c(1, 1) })).toBe(1);
    expect(overallScore({})).toBeUndefined();
  });
});

describe("changesSince", () => {
  it("is empty for a first report and when nothing moved", () => {
    expect(changesSince(undefined, { a: c(1, 2) })).toEqual([]);
    expect(changesSince({ a: c(1, 2) }, { a: { ...c(1, 2), rationale: "reworded" } })).toEqual([]);
  });

  it("lists moved, new and dropped criteria by ID", () => {
    expect(changesSince({ b: c(1, 2), a: c(0, 1), gone: c(1, 1) }, { b: c(2, 2), a: c(0, 1), added: c(0, 3) })).toEqual(
      [
        { criterionId: "added", numerator: 0, denominator: 3 },
        { criterionId: "b", previousNumerator: 1, previousDenominator: 2, numerator: 2, denominator: 2 },
        { criterionId: "gone", previousNumerator: 1, previousDenominator: 1 },
      ],
    );
  });

  it("counts a changed denominator as a change", () => {
    expect(changesSince({ a: c(1, 2) }, { a: c(1, 3) })).toEqual([
      { criterionId: "a", previousNumerator: 1, previousDenominator: 2, numerator: 1, denominator: 3 },
    ]);
  });
});
