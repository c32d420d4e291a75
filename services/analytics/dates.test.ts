// The date rules of the analytics endpoints and of on-demand rollups (no database).
import { describe, expect, it } from "vitest";
import { invalidArgumentMessage as error } from "../../test/support/domain-errors.js";
import fc from "fast-check";
import { addDays, eachDay, isDay, isoOfMs, parseDayRange } from "./dates.js";
import { parseRollupRange } from "./rollup/rollup.js";

const TODAY = "2027-03-01";

describe("parseDayRange", () => {
  it("accepts ranges from 2026-01-14 through yesterday, up to 366 days", () => {
    expect(parseDayRange("2026-01-14", "2026-01-14", TODAY)).toEqual({ start: "2026-01-14", end: "2026-01-14" });
    expect(parseDayRange("2026-02-01", "2027-02-01", TODAY)).toEqual({ start: "2026-02-01", end: "2027-02-01" }); // 366 days
    expect(parseDayRange("2027-02-28", "2027-02-28", TODAY).end).toBe("2027-02-28");
  });

  it("answers every broken rule with a 400 naming the field", () => {
    expect(error(() => parseDayRange("2027-02-20", TODAY, TODAY))).toMatch(
      /^endDate: is today; analytics data lags by 24 hours, so the latest day available is 2027-02-28/,
    );
    expect(error(() => parseDayRange(TODAY, TODAY, TODAY))).toMatch(/lags by 24 hours/);
    expect(error(() => parseDayRange(TODAY, "2027-02-28", TODAY))).toMatch(
      /^startDate: is today; analytics data lags by 24 hours, so the latest day available is 2027-02-28/,
    );
    expect(error(() => parseDayRange("2027-02-20", "2027-03-05", TODAY))).toMatch(
      /^endDate: is in the future; analytics data lags by 24 hours/,
    );
    expect(error(() => parseDayRange("2027-03-02", "2027-03-05", TODAY))).toMatch(/^startDate: is in the future/);
    expect(error(() => parseDayRange("2026-01-13", "2026-02-01", TODAY))).toMatch(
      /^startDate: must not be before 2026-01-14/,
    );
    expect(error(() => parseDayRange("2026-02-01", "2026-01-13", TODAY))).toMatch(
      /^endDate: must not be before 2026-01-14/,
    );
    expect(error(() => parseDayRange("2026-03-02", "2026-03-01", TODAY))).toMatch(
      /^startDate: must not be after endDate/,
    );
    expect(error(() => parseDayRange("2026-02-01", "2027-02-02", TODAY))).toMatch(
      /^endDate: the range may span at most 366 days, got 367/,
    );
    expect(error(() => parseDayRange("", "2026-03-01", TODAY))).toMatch(/^startDate: is required/);
    expect(error(() => parseDayRange("2026-03-01", "2026/03/02", TODAY))).toMatch(
      /^endDate: must be a date written YYYY-MM-DD/,
    );
    expect(error(() => parseDayRange("2026-02-29", "2026-03-02", TODAY))).toMatch(/^startDate: must be a date/);
  });
});

describe("parseRollupRange", () => {
  it("allows finished days only", () => {
    expect(parseRollupRange("2026-03-01", "2026-03-05", "2027-02-28")).toEqual({
      from: "2026-03-01",
      to: "2026-03-05",
    });
    expect(error(() => parseRollupRange("2027-02-28", "2027-03-01", "2027-02-28"))).toMatch(
      /^to_date: must not be after 2027-02-28/,
    );
    expect(error(() => parseRollupRange("2026-03-05", "2026-03-01", "2027-02-28"))).toMatch(
      /^from_date: must not be after to_date/,
    );
    expect(error(() => parseRollupRange("x", "2026-03-01", "2027-02-28", { from: "--from", to: "--to" }))).toMatch(
      /^--from: /,
    );
  });
});

describe("day arithmetic", () => {
  it("works in UTC across months and leap years", () => {
    expect(addDays("2028-02-28", 1)).toBe("2028-02-29");
    expect(addDays("2026-03-01", -1)).toBe("2026-02-28");
    expect(eachDay("2026-12-30", "2027-01-02")).toEqual(["2026-12-30", "2026-12-31", "2027-01-01", "2027-01-02"]);
    expect(isDay("2028-02-29")).toBe(true);
    expect(isDay("2026-02-29")).toBe(false);
  });
});

describe("eachDay", () => {
  it("steps over month, year and leap-day boundaries like addDays", () => {
    for (const [start, end] of [
      ["2026-01-14", "2027-03-02"],
      ["2028-02-27", "2028-03-01"],
      ["2026-12-31", "2026-12-31"],
    ] as const) {
      const expected: string[] = [];
      for (let d: string = start; d <= end; d = addDays(d, 1)) expected.push(d);
      expect(eachDay(start, end)).toEqual(expected);
    }
    expect(eachDay("2026-03-02", "2026-03-01")).toEqual([]);
    expect(eachDay("2028-02-28", "2028-03-01")).toEqual(["2028-02-28", "2028-02-29", "2028-03-01"]);
  });
});

describe("isoOfMs", () => {
  it("writes what toISOString writes, from 1970 through 9999 and outside it", () => {
    const edges = [0, 1, 999, 1000, 59_999, 3_599_999, 86_399_999, 86_400_000, 951_782_400_000, 253_402_300_799_999];
    for (const ms of [...edges, -1, -86_400_001, 253_402_300_800_000])
      expect(isoOfMs(ms)).toBe(new Date(ms).toISOString());
    fc.assert(
      fc.property(fc.integer({ min: -8.64e15, max: 8.64e15 }), (ms) => isoOfMs(ms) === new Date(ms).toISOString()),
      { numRuns: 20_000 },
    );
  });

  it("keeps no day from one instant to the next that belongs to another", () => {
    const day = Date.UTC(2026, 10, 27);
    expect(isoOfMs(day + 5)).toBe("2026-11-27T00:00:00.005Z");
    expect(isoOfMs(day - 5)).toBe("2026-11-26T23:59:59.995Z");
    expect(isoOfMs(day + 5)).toBe("2026-11-27T00:00:00.005Z");
  });
});
