// /code (docs/analytics.md): lines changed and edit decisions per day, from the day rows the
// rollup stored (analytics_daily, migration 0020). Without group_by one row per day of the range
// with zeros where nothing is stored; with group_by=language or user the breakdown flattened
// into {date, group_key, ...metrics} rows ordered by date then group_key, as the spec's
// endpoints do. Keys are the json_names of CodeRow and CodeGroupRow in analytics.proto.
import type { JsonObject } from "@bufbuild/protobuf";
import { eachDay, type DayRange } from "../dates.js";
import type { CodeEntry, DailyRow } from "../tables.js";
import { groupedRows, parseGroupBy } from "./group-by.js";

export const CODE_COLUMNS = [
  "day",
  "lines_added",
  "lines_removed",
  "edits_accepted",
  "edits_rejected",
  "code_by_language",
  "code_by_user",
] as const;
export type CodeDay = Pick<DailyRow, (typeof CODE_COLUMNS)[number]>;

export const CODE_GROUPS = ["language", "user"] as const;
export type CodeGrouping = (typeof CODE_GROUPS)[number];

/** The request's group_by: null when omitted; a 400 naming the field for anything else. */
export const codeGroupBy = (value: string): CodeGrouping | null => parseGroupBy(value, CODE_GROUPS);

/** Accepted edits among the day's decisions; 0 on a day without any (not NaN, not null). */
export function acceptanceRate(accepted: number, rejected: number): number {
  return accepted + rejected > 0 ? accepted / (accepted + rejected) : 0;
}

function metrics(c: CodeEntry) {
  return {
    lines_added: c.lines_added,
    lines_removed: c.lines_removed,
    edits_accepted: c.edits_accepted,
    edits_rejected: c.edits_rejected,
    edit_acceptance_rate: acceptanceRate(c.edits_accepted, c.edits_rejected),
  };
}

export function codeRows(range: DayRange, days: readonly CodeDay[], grouping: CodeGrouping | null): JsonObject[] {
  if (grouping === "language")
    return groupedRows(
      days,
      (d) => d.code_by_language,
      (l) => l.language,
      metrics,
    );
  if (grouping === "user")
    return groupedRows(
      days,
      (d) => d.code_by_user,
      (u) => u.user_id,
      metrics,
    );
  const byDay = new Map(days.map((d) => [d.day, d]));
  return eachDay(range.start, range.end).map((date) => {
    const d = byDay.get(date);
    return {
      date,
      ...metrics(d ?? { lines_added: 0, lines_removed: 0, edits_accepted: 0, edits_rejected: 0 }),
      by_language: (d?.code_by_language ?? []) as JsonObject[],
      by_user: (d?.code_by_user ?? []) as JsonObject[],
    };
  });
}
