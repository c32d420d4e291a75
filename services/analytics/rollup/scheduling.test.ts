// Pure pieces of the rollup schedule (no database).
import { describe, expect, it } from "vitest";
import { chunkDays } from "./rollup.js";
import { activeWindowsThrough } from "./plan.js";
import { msUntilNextTick } from "./scheduler.js";

describe("msUntilNextTick", () => {
  it("waits for the next five past the hour (00:05 UTC is the daily sweep)", () => {
    expect(msUntilNextTick(Date.parse("2026-03-01T23:59:00Z"))).toBe(6 * 60_000);
    expect(msUntilNextTick(Date.parse("2026-03-02T00:05:00Z"))).toBe(3_600_000);
    expect(msUntilNextTick(Date.parse("2026-03-02T00:04:59.500Z"))).toBe(500);
  });
});

describe("chunkDays", () => {
  it("groups sorted, distinct days into runs of at most 7 days", () => {
    expect(chunkDays(["2026-03-03", "2026-03-01", "2026-03-01"])).toEqual([["2026-03-01", "2026-03-03"]]);
    const chunks = chunkDays(["2026-01-20", "2026-01-26", "2026-01-27", "2026-06-01"]);
    expect(chunks).toEqual([["2026-01-20", "2026-01-26"], ["2026-01-27"], ["2026-06-01"]]);
  });
});

describe("activeWindowsThrough", () => {
  it("covers the 29 days after the last recomputed day, never past the limit", () => {
    expect(activeWindowsThrough("2026-03-01", "2026-12-31")).toBe("2026-03-30");
    expect(activeWindowsThrough("2026-03-01", "2026-03-10")).toBe("2026-03-10");
  });
});
