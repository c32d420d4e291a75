import { describe, expect, it } from "vitest";
import { preferredCoding } from "./accept-encoding.js";

describe("preferredCoding", () => {
  it.each([
    [undefined, null],
    ["", null],
    ["identity", null],
    ["br", null],
    ["gzip", "gzip"],
    ["x-gzip", "gzip"],
    ["GZIP;q=0.5", "gzip"],
    ["gzip, deflate, br", "deflate"],
    ["deflate, gzip", "deflate"],
    ["DEFLATE", "deflate"],
    ["deflate;q=0", null],
    ["deflate;q=0.000", null],
    ["deflate;q=0.5", "deflate"],
    ["deflate;q=0.5, gzip", "gzip"],
    ["deflate;q=0, gzip;q=0.1", "gzip"],
    ["*", "deflate"],
    ["*;q=0", null],
    ["br, *;q=0.1", "deflate"],
    ["deflate;q=0, *", "gzip"],
    ["deflate;q=0, gzip;q=0, *", null],
    ["gzip;q=0, *;q=0.3", "deflate"],
  ] as const)("%s → %s", (header, expected) => {
    expect(preferredCoding(header)).toBe(expected);
  });

  it("reads a repeated header", () => {
    expect(preferredCoding(["br", "gzip"])).toBe("gzip");
    expect(preferredCoding(["gzip;q=0.2", "deflate;q=0.4"])).toBe("deflate");
  });
});
