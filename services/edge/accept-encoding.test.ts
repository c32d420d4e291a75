import { describe, expect, it } from "vitest";
import { acceptsDeflate } from "./accept-encoding.js";

describe("acceptsDeflate", () => {
  it.each([
    [undefined, false],
    ["", false],
    ["gzip", false],
    ["gzip, deflate, br", true],
    ["DEFLATE", true],
    ["deflate;q=0", false],
    ["deflate;q=0.000", false],
    ["deflate;q=0.5", true],
    ["*", true],
    ["*;q=0", false],
    ["gzip, *;q=0.1", true],
    ["deflate;q=0, *", false],
    ["identity", false],
  ] as const)("%s → %s", (header, expected) => {
    expect(acceptsDeflate(header)).toBe(expected);
  });

  it("reads a repeated header", () => {
    expect(acceptsDeflate(["gzip", "deflate"])).toBe(true);
  });
});
