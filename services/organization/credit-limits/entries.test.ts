import { describe, expect, it } from "vitest";
import { invalidArgumentMessage } from "../../../test/support/domain-errors.js";
import { checkEntryCount, ENTRY_ERRORS, sortEntries } from "./entries.js";

const users = new Map([
  ["ada@example.com", "u1"],
  ["grace@example.com", "u2"],
  ["linus@example.com", "u3"],
]);

describe("credit-limit entries", () => {
  it("needs 1 to 100 entries", () => {
    expect(() => checkEntryCount(1)).not.toThrow();
    expect(() => checkEntryCount(100)).not.toThrow();
    for (const n of [0, 101]) {
      expect(invalidArgumentMessage(() => checkEntryCount(n))).toBe(`users: must have 1 to 100 entries, got ${n}`);
    }
  });

  it("accepts known users with finite limits >= 0, matching email case-insensitively", () => {
    const { accepted, errors } = sortEntries(
      [
        { email: "Ada@Example.com", limit: 1500 },
        { email: "grace@example.com", limit: 0 },
      ],
      users,
    );
    expect(errors).toEqual([]);
    expect(accepted).toEqual([
      { email: "Ada@Example.com", limit: 1500, userId: "u1" },
      { email: "grace@example.com", limit: 0, userId: "u2" },
    ]);
  });

  it("refuses unknown emails, bad or missing limits, missing emails and every occurrence of a repeated email", () => {
    const { accepted, errors } = sortEntries(
      [
        { email: "nobody@example.com", limit: 10 },
        { email: "ada@example.com", limit: -1 },
        { email: "grace@example.com", limit: Number.POSITIVE_INFINITY },
        { email: "grace@example.com", limit: 5 },
        { email: "linus@example.com", limit: Number.NaN },
        { email: "", limit: 3 },
        { email: "margaret@example.com" },
      ],
      users,
    );
    expect(accepted).toEqual([]);
    expect(errors).toEqual([
      { email: "nobody@example.com", error: ENTRY_ERRORS.unknownEmail },
      { email: "ada@example.com", error: ENTRY_ERRORS.badLimit },
      { email: "grace@example.com", error: ENTRY_ERRORS.repeated },
      { email: "grace@example.com", error: ENTRY_ERRORS.repeated },
      { email: "linus@example.com", error: ENTRY_ERRORS.badLimit },
      { email: "", error: ENTRY_ERRORS.missingEmail },
      { email: "margaret@example.com", error: ENTRY_ERRORS.missingLimit },
    ]);
  });
});
