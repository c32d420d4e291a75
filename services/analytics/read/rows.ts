// The JSON rows of the four day endpoints (docs/interface.md §2.2-2.5) from the stored day aggregates: one
// row per day of the range, zeros and empty breakdowns where no row is stored, or with group_by
// one row per (day, group) ordered by date then group_key. Keys are the json_names of the typed
// row messages in analytics.proto (TokensRow, TokensGroupRow, ...).
import type { JsonObject } from "@bufbuild/protobuf";
import { eachDay, type DayRange } from "../dates.js";
import type { ActivityDay, ProductivityDay, TokensByModelDay, ToolsDay } from "./queries.js";

/** Byte-order comparison (the "C" collation the database sorts keys with, for ASCII keys). */
export const byKey = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function fill<T extends { day: string }>(
  range: DayRange,
  stored: readonly T[],
  toRow: (date: string, day: T | undefined) => JsonObject,
): JsonObject[] {
  const byDay = new Map(stored.map((d) => [d.day, d]));
  return eachDay(range.start, range.end).map((date) => toRow(date, byDay.get(date)));
}

/** The /tokens row of a day without model usage or without a rollup: zeros, empty breakdowns. */
export function zeroTokensRow(date: string): string {
  return JSON.stringify({
    date,
    billable_tokens: 0,
    input_tokens: 0,
    output_tokens: 0,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
    by_model: [],
    by_user: [],
  });
}

/** group_by=model: billable, input and output tokens per model and day. */
export function tokensGroupRows(days: readonly TokensByModelDay[]): JsonObject[] {
  return days.flatMap((d) =>
    [...d.by_model]
      .sort((a, b) => byKey(a.model_id, b.model_id))
      .map((m) => ({
        date: d.day,
        group_key: m.model_id,
        billable_tokens: m.billable_tokens,
        input_tokens: m.input_tokens,
        output_tokens: m.output_tokens,
      })),
  );
}

const ratio = (part: number, whole: number) => (whole > 0 ? part / whole : 0);

export function toolsRows(range: DayRange, days: readonly ToolsDay[]): JsonObject[] {
  return fill(range, days, (date, d) => {
    const calls = d?.tool_calls ?? 0;
    const sessions = d?.distinct_sessions ?? 0;
    return {
      date,
      tool_calls: calls,
      by_tool: (d?.by_tool ?? []) as JsonObject[],
      mcp_users_with_mcp: d?.mcp_users_with_mcp ?? 0,
      mcp_by_server: (d?.mcp_by_server ?? []) as JsonObject[],
      skills_invocations: d?.skills_invocations ?? 0,
      skills_by_name: (d?.skills_by_name ?? []) as JsonObject[],
      slash_commands_invocations: d?.slash_commands_invocations ?? 0,
      slash_commands_by_name: (d?.slash_commands_by_name ?? []) as JsonObject[],
      hooks_invocations: d?.hooks_invocations ?? 0,
      hooks_by_event: (d?.hooks_by_event ?? []) as JsonObject[],
      web_users: d?.web_users ?? 0,
      autonomy_ratio_avg: d?.autonomy_ratio_avg ?? 0,
      autonomy_ratio_p50: d?.autonomy_ratio_p50 ?? 0,
      autonomy_ratio_p90: d?.autonomy_ratio_p90 ?? 0,
      tool_calls_per_session_avg: ratio(calls, sessions),
      user_turns_per_session_avg: ratio(d?.user_messages ?? 0, sessions),
      tool_autonomy_level_ratio: {
        auto_high: ratio(d?.tool_calls_auto_high ?? 0, calls),
        auto_medium: ratio(d?.tool_calls_auto_medium ?? 0, calls),
        auto_low: ratio(d?.tool_calls_auto_low ?? 0, calls),
        manual: ratio(d?.tool_calls_manual ?? 0, calls),
      },
    };
  });
}

/** group_by=tool_name: tool calls per tool and day. */
export function toolsGroupRows(days: readonly ToolsDay[]): JsonObject[] {
  return days.flatMap((d) =>
    [...d.by_tool]
      .sort((a, b) => byKey(a.tool, b.tool))
      .map((t) => ({ date: d.day, group_key: t.tool, tool_calls: t.invocations })),
  );
}

export function activityRows(range: DayRange, days: readonly ActivityDay[]): JsonObject[] {
  return fill(range, days, (date, d) => ({
    date,
    daily_active_users: d?.daily_active_users ?? 0,
    weekly_active_users: d?.weekly_active_users ?? 0,
    monthly_active_users: d?.monthly_active_users ?? 0,
    daily_active_users_by_client: d?.daily_active_users_by_client ?? {},
    sessions: d?.sessions ?? 0,
    messages: d?.messages ?? 0,
    user_messages: d?.user_messages ?? 0,
  }));
}

/** group_by=client: distinct users per client and day (only clients used that day). */
export function activityGroupRows(days: readonly ActivityDay[]): JsonObject[] {
  return days.flatMap((d) =>
    Object.entries(d.daily_active_users_by_client)
      .sort(([a], [b]) => byKey(a, b))
      .map(([client, users]) => ({ date: d.day, group_key: client, daily_active_users: users })),
  );
}

export function productivityRows(range: DayRange, days: readonly ProductivityDay[]): JsonObject[] {
  return fill(range, days, (date, d) => ({
    date,
    files_created: d?.files_created ?? 0,
    files_edited: d?.files_edited ?? 0,
    by_extension: (d?.by_extension ?? []) as JsonObject[],
    by_language: (d?.by_language ?? []) as JsonObject[],
    git_commits: d?.git_commits ?? 0,
    git_prs_created: d?.git_prs_created ?? 0,
  }));
}
