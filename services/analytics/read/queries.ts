// Reads of the aggregate tables behind the five endpoints: each is one indexed range read of at
// most 366 day rows (or one page of user rows), scoped by organization.
import { sql } from "kysely";
import type { Executor } from "../../database.js";
import type { DayRange } from "../dates.js";
import type { DailyRow } from "../tables.js";

/**
 * The organization's rolled-up days of the range (ordered by day), with the given columns of
 * analytics_daily (constant names, never input; the *_COLUMNS below): the read behind each day
 * endpoint.
 */
export async function readDays<C extends keyof DailyRow>(
  db: Executor,
  orgId: string,
  range: DayRange,
  columns: readonly C[],
): Promise<Array<Pick<DailyRow, C>>> {
  const result = await sql<Pick<DailyRow, C>>`
    select ${sql.raw(columns.join(", "))}
    from analytics_daily
    where org_id = ${orgId} and day between ${range.start}::date and ${range.end}::date
    order by day`.execute(db);
  return result.rows;
}

/** The per-model breakdown of each rolled-up day (/tokens?group_by=model). */
export const TOKENS_BY_MODEL_COLUMNS = ["day", "by_model"] as const;
export type TokensByModelDay = Pick<DailyRow, (typeof TOKENS_BY_MODEL_COLUMNS)[number]>;

export const TOOLS_COLUMNS = [
  "day",
  "tool_calls",
  "by_tool",
  "mcp_users_with_mcp",
  "mcp_by_server",
  "skills_invocations",
  "skills_by_name",
  "slash_commands_invocations",
  "slash_commands_by_name",
  "hooks_invocations",
  "hooks_by_event",
  "web_users",
  "autonomy_ratio_avg",
  "autonomy_ratio_p50",
  "autonomy_ratio_p90",
  "distinct_sessions",
  "user_messages",
  "tool_calls_auto_high",
  "tool_calls_auto_medium",
  "tool_calls_auto_low",
  "tool_calls_manual",
] as const;
export type ToolsDay = Pick<DailyRow, (typeof TOOLS_COLUMNS)[number]>;

export const ACTIVITY_COLUMNS = [
  "day",
  "daily_active_users",
  "weekly_active_users",
  "monthly_active_users",
  "daily_active_users_by_client",
  "sessions",
  "messages",
  "user_messages",
] as const;
export type ActivityDay = Pick<DailyRow, (typeof ACTIVITY_COLUMNS)[number]>;

export const PRODUCTIVITY_COLUMNS = [
  "day",
  "files_created",
  "files_edited",
  "by_extension",
  "by_language",
  "git_commits",
  "git_prs_created",
] as const;
export type ProductivityDay = Pick<DailyRow, (typeof PRODUCTIVITY_COLUMNS)[number]>;

/** A /users row (docs/interface.md §2.6) as the rollup rendered it (analytics_user_daily.row_json). */
export interface RenderedUserDay {
  user_id: string;
  user_email: string | null;
  date: string;
  tool_calls: number;
  billable_tokens: number;
  primary_model: string;
  primary_model_tier: string;
  files_created: number;
  files_edited: number;
  git_commits: number;
  git_prs_created: number;
  mcp_calls: number;
  skill_calls: number;
  slash_commands: number;
  hooks: number;
  sessions: number;
  messages: number;
  user_messages: number;
  assistant_messages: number;
  autonomy_ratio: number;
  delegation_level: string;
  languages: string[];
}

/**
 * One /users page: the first `limit` users (by user ID, after `cursor`) active in the range, with
 * all their day rows as one JSON text (the rendered rows joined by commas, ordered by user ID then
 * day), plus whether another user follows. Two index range reads on the primary key
 * (org_id, user_id, day).
 */
export async function readUsersPage(
  db: Executor,
  orgId: string,
  range: DayRange,
  limit: number,
  cursor: string | undefined,
): Promise<{ rowsJson: string; hasMore: boolean; lastUserId: string | undefined }> {
  const users = await sql<{ user_id: string }>`
    select user_id from analytics_user_daily
    where org_id = ${orgId} and day between ${range.start}::date and ${range.end}::date
      ${cursor !== undefined ? sql`and user_id > ${cursor}` : sql``}
    group by user_id
    order by user_id
    limit ${limit + 1}`.execute(db);
  const ids = users.rows.map((r) => r.user_id);
  const hasMore = ids.length > limit;
  const page = ids.slice(0, limit);
  if (page.length === 0) return { rowsJson: "", hasMore: false, lastUserId: undefined };
  const first = page[0]!;
  const last = page[page.length - 1]!;
  // The rows in primary-key order, joined here: string_agg(... order by) would sort them again,
  // and one value of megabytes costs more to send and receive than the rows one by one.
  const rows = await sql<{ row_json: string }>`
    select row_json from analytics_user_daily
    where org_id = ${orgId} and user_id between ${first} and ${last}
      and day between ${range.start}::date and ${range.end}::date
    order by user_id, day`.execute(db);
  return { rowsJson: rows.rows.map((r) => r.row_json).join(","), hasMore, lastUserId: last };
}

/**
 * What a range's /users pages are made of: each rolled-up day of the organization in the range
 * with the digest of its user rows (analytics_daily.users_md5, written by the rollup that wrote
 * the rows). While this list stays the same, so does every page of the range: the ETag is made
 * from it, not from megabytes of rows, and a 304 reads no rows. Days rolled up before the digest
 * existed give their rollup time instead, which changes whenever their rows can.
 */
export async function readDayVersions(db: Executor, orgId: string, range: DayRange): Promise<string[]> {
  const result = await sql<{ v: string }>`
    select day::text || ':' || coalesce(users_md5, rolled_up_at::text) as v from analytics_daily
    where org_id = ${orgId} and day between ${range.start}::date and ${range.end}::date
    order by day`.execute(db);
  return result.rows.map((r) => r.v);
}

/** Where a walk over a range's /users rows stopped: the last row read. */
export interface UserDayKey {
  user_id: string;
  day: string;
}

/**
 * The next `limit` /users rows of the range after `after` (all users, ordered by user ID then
 * day): what an export reads batch by batch (export.ts), one index range read on the primary
 * key (org_id, user_id, day) each, so no batch depends on the range's size.
 */
export async function readUserRowsAfter(
  db: Executor,
  orgId: string,
  range: DayRange,
  after: UserDayKey | undefined,
  limit: number,
): Promise<Array<UserDayKey & { row_json: string }>> {
  const result = await sql<UserDayKey & { row_json: string }>`
    select user_id, day, row_json from analytics_user_daily
    where org_id = ${orgId} and day between ${range.start}::date and ${range.end}::date
      ${after !== undefined ? sql`and (user_id, day) > (${after.user_id}, ${after.day}::date)` : sql``}
    order by user_id, day
    limit ${limit}`.execute(db);
  return result.rows;
}
