// Nesting of JSON values: what Envoy's JSON parser counts (the value itself is level 1).
import { describe, expect, it } from "vitest";
import { firstTooDeep } from "./json-nesting.js";

describe("firstTooDeep", () => {
  it("counts objects and arrays, the value itself as level 1; scalars are no level", () => {
    expect(firstTooDeep("x", 0)).toBeUndefined();
    expect(firstTooDeep({}, 1)).toBeUndefined();
    expect(firstTooDeep({}, 0)).toEqual({ key: undefined });
    expect(firstTooDeep({ a: { b: [1, "s", null] } }, 3)).toBeUndefined();
    expect(firstTooDeep({ a: { b: [1, "s", null] } }, 2)).toEqual({ key: "b" });
    expect(firstTooDeep([[[]]], 2)).toEqual({ key: undefined });
  });

  it("names the first container past the limit in document order", () => {
    expect(firstTooDeep({ a: {}, b: { c: {} }, d: { e: {} } }, 2)).toEqual({ key: "c" });
    expect(firstTooDeep({ a: [[]], b: { c: {} } }, 2)).toEqual({ key: undefined });
  });

  it("walks 100,000 levels without exhausting the stack", () => {
    let deep: unknown = 0;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(firstTooDeep(deep, 100)).toEqual({ key: undefined });
    expect(firstTooDeep(deep, 100_000)).toBeUndefined();
  });
});
