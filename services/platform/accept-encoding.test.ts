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
    ["gzip, deflate, br, zstd", "gzip"],
    ["deflate, gzip", "gzip"],
    ["DEFLATE", "deflate"],
    ["deflate;q=0", null],
    ["deflate;q=0.000", null],
    ["deflate;q=0.5", "deflate"],
    ["deflate;q=1.000", "deflate"],
    ["gzip;q=0.5, deflate", "deflate"],
    ["deflate;q=0.5, gzip", "gzip"],
    ["deflate;q=0, gzip;q=0.1", "gzip"],
    ["*", "gzip"],
    ["*;q=0", null],
    ["br, *;q=0.1", "gzip"],
    ["deflate;q=0, *", "gzip"],
    ["gzip;q=0, *", "deflate"],
    ["deflate;q=0, gzip;q=0, *", null],
    ["gzip;q=0, *;q=0.3", "deflate"],
    // identity wins where the client prefers it, not merely where it is listed
    ["identity, gzip;q=0.1", null],
    ["identity;q=0.5, gzip", "gzip"],
    ["gzip, identity", "gzip"],
    ["identity;q=0, gzip;q=0.2", "gzip"],
    // a malformed q-value is no acceptance
    ["gzip;q=0.0000", null],
    ["gzip;q=1.5", null],
    ["gzip;q=abc, deflate;q=0.2", "deflate"],
    ["gzip;q = 0", null],
    ["gzip;level=9", "gzip"],
  ] as const)("%s → %s", (header, expected) => {
    expect(preferredCoding(header)).toBe(expected);
  });

  it("reads a repeated header", () => {
    expect(preferredCoding(["br", "gzip"])).toBe("gzip");
    expect(preferredCoding(["gzip;q=0.2", "deflate;q=0.4"])).toBe("deflate");
  });
});
