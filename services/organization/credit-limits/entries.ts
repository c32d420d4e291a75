// Sorting the entries of a credit-limit update (PUT /organization/usage/limits/users) into the
// ones to store and the ones to report back as errors. Each entry stands or falls on its own.
import { invalidArgument } from "../../platform/errors.js";

export const MAX_ENTRIES = 100;

export interface LimitEntry {
  email: string;
  /** Absent when the client sent no limit. */
  limit?: number | undefined;
}

export interface AcceptedLimit {
  email: string;
  limit: number;
  userId: string;
}

export interface LimitError {
  email: string;
  error: string;
}

export const ENTRY_ERRORS = {
  missingEmail: "email is required",
  repeated: "email appears more than once in this request; send each user once",
  missingLimit: "limit is required (Standard Credits per calendar month, UTC)",
  badLimit: "limit must be a finite number >= 0 (Standard Credits per calendar month, UTC)",
  unknownEmail: "unknown email: no user with this email in the organization",
} as const;

/** The whole request is a 400 unless it has 1 to 100 entries. */
export function checkEntryCount(count: number): void {
  if (count < 1 || count > MAX_ENTRIES)
    throw invalidArgument("users", `must have 1 to ${MAX_ENTRIES} entries, got ${count}`);
}

export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/**
 * `userIds` maps normalized emails of the organization's users to their IDs. An email sent twice
 * is an error for every occurrence: which limit was meant is anybody's guess, so none is stored.
 */
export function sortEntries(
  entries: readonly LimitEntry[],
  userIds: ReadonlyMap<string, string>,
): { accepted: AcceptedLimit[]; errors: LimitError[] } {
  const counts = new Map<string, number>();
  for (const e of entries) counts.set(normalizeEmail(e.email), (counts.get(normalizeEmail(e.email)) ?? 0) + 1);
  const accepted: AcceptedLimit[] = [];
  const errors: LimitError[] = [];
  for (const entry of entries) {
    const key = normalizeEmail(entry.email);
    const fail = (error: string) => errors.push({ email: entry.email, error });
    if (key === "") fail(ENTRY_ERRORS.missingEmail);
    else if ((counts.get(key) ?? 0) > 1) fail(ENTRY_ERRORS.repeated);
    else if (entry.limit === undefined) fail(ENTRY_ERRORS.missingLimit);
    else if (!Number.isFinite(entry.limit) || entry.limit < 0) fail(ENTRY_ERRORS.badLimit);
    else {
      const userId = userIds.get(key);
      if (userId === undefined) fail(ENTRY_ERRORS.unknownEmail);
      // -0 prints as 0 everywhere else; store the same.
      else accepted.push({ email: entry.email, limit: entry.limit === 0 ? 0 : entry.limit, userId });
    }
  }
  return { accepted, errors };
}
