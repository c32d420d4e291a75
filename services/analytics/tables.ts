// Table types of the analytics area: raw telemetry events (partitioned by month), the bookkeeping
// of ingest and rollup, and the per-day aggregates every endpoint reads.
import type { ColumnType, Generated, Selectable } from "kysely";

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** A `date` column: read as its YYYY-MM-DD string (see platform/db.ts type parsers). */
type Day = ColumnType<string, string, string>;
/** bigint / numeric columns: read as numbers (platform/db.ts), written as numbers or strings. */
type Count = ColumnType<number, number | string | bigint, number | string | bigint>;
type Json<T> = ColumnType<T, string, string>;

/**
 * One telemetry event (docs/telemetry.md). Range-partitioned by `occurred_at`, one partition per
 * UTC month, created on demand (ingest/partitions.ts). Only the fields of the event's own type are
 * set.
 */
export interface EventsTable {
  org_id: string;
  occurred_at: Timestamp;
  user_id: string;
  user_email: string | null;
  session_id: string | null;
  client: string;
  type: string;
  /** session_start.autonomy_mode or tool_call.autonomy_level. */
  autonomy: string | null;
  role: string | null;
  model_id: string | null;
  model_tier: string | null;
  input_tokens: Count | null;
  output_tokens: Count | null;
  cache_read_tokens: Count | null;
  cache_write_tokens: Count | null;
  tool: string | null;
  mcp_server: string | null;
  /** skill or slash_command name. */
  name: string | null;
  hook_event: string | null;
  hook_matcher: string | null;
  hook_command: string | null;
  op: string | null;
  path: string | null;
  /** Lower-case extension of `path` without the dot ("" when none), derived at ingest. */
  extension: string | null;
  language: string | null;
  event_id: string | null;
  /** lines_changed (migration 0019). */
  lines_added: Count | null;
  lines_removed: Count | null;
  /** edit_decision: accept or reject. */
  decision: string | null;
  /** model_usage: client-reported cost in US dollars; null when not reported. */
  cost_usd: number | null;
  /** native, otlp_metric or otlp_log (ingest/events.ts EVENT_SOURCES); not part of the event format. */
  source: ColumnType<string, string | undefined, string>;
}

/**
 * (org_id, event_id) of every stored event that carried an event_id: makes ingest idempotent.
 * Primary key (event_id, org_id), both in the "C" collation (migration 0008).
 */
export interface EventIdsTable {
  org_id: string;
  event_id: string;
}

/**
 * Past (organization, day) pairs that received events after their rollup (or before any): one
 * row per ingest that stored such events (an append-only log; a day may have several).
 */
export interface PendingDaysTable {
  org_id: string;
  day: Day;
  touched_at: Generated<Timestamp>;
}

/** Days the scheduler has swept for every organization (catch-up starts after the last one). */
export interface RollupRunsTable {
  day: Day;
  finished_at: Generated<Timestamp>;
}

/** Credit multiplier per model_id (docs/metrics.md, "/tokens"); a model not listed counts 1. */
export interface CreditMultipliersTable {
  model_id: string;
  multiplier: Count;
  updated_at: Generated<Timestamp>;
}

/**
 * Price per model_id, in US dollars per million tokens (migration 0020; docs/analytics.md "Costs"),
 * applied by the rollup to usage without a client-reported cost. Set with `agentplane price set`.
 */
export interface ModelPricesTable {
  model_id: string;
  input_per_million: Count;
  output_per_million: Count;
  cache_read_per_million: Count;
  cache_write_per_million: Count;
  updated_at: Generated<Timestamp>;
}

/** Per organization, day, user and model: the model_usage sums (credits per user and model). */
export interface UserModelDailyTable {
  org_id: string;
  day: Day;
  user_id: string;
  model_id: string;
  model_tier: string;
  input_tokens: Count;
  output_tokens: Count;
  cache_read_tokens: Count;
  cache_write_tokens: Count;
  /** Exact (numeric), unrounded. */
  billable_tokens: Count;
  /** US dollars, exact (numeric): reported_cost_usd plus the priced tokens of usage without a reported cost. */
  cost_usd: Count;
  /** The part of cost_usd the client reported (model_usage.cost_usd). */
  reported_cost_usd: Count;
  /** Tokens of usage with neither a reported cost nor a price for the model: they cost 0. */
  unpriced_tokens: Count;
}

/** One row per organization, user and day on which the user was active: the /users row. */
export interface UserDailyTable {
  org_id: string;
  day: Day;
  user_id: string;
  user_email: string | null;
  events: Count;
  tool_calls: Count;
  mcp_calls: Count;
  skill_calls: Count;
  slash_commands: Count;
  hooks: Count;
  sessions: Count;
  messages: Count;
  user_messages: Count;
  assistant_messages: Count;
  files_created: Count;
  files_edited: Count;
  git_commits: Count;
  git_prs_created: Count;
  billable_tokens: Count;
  primary_model: string;
  primary_model_tier: string;
  delegation_level: string;
  languages: string[];
  /** Bit set of the clients the user used that day (rollup/days.ts CLIENT_BITS). */
  clients: number;
  /** The /users row (docs/interface.md §2.6) as the API prints it, rendered by the rollup. */
  row_json: string;
}

/** An entry of analytics_daily.by_model: one model's tokens that day (/tokens?group_by=model). */
export type ModelEntry = {
  model_id: string;
  model_tier: string;
  billable_tokens: number;
  input_tokens: number;
  output_tokens: number;
};

/** An entry of analytics_daily.by_tool: one tool's calls that day. (Types, not interfaces: JSON values.) */
export type ToolEntry = { tool: string; invocations: number };

/** An entry of analytics_daily.code_by_language (user: code_by_user, with user_id and user_email instead). */
export type CodeEntry = {
  lines_added: number;
  lines_removed: number;
  edits_accepted: number;
  edits_rejected: number;
};
export type LanguageCodeEntry = CodeEntry & { language: string };
export type UserCodeEntry = CodeEntry & { user_id: string; user_email: string };
/** An entry of analytics_daily.costs_by_model. */
export type ModelCostEntry = {
  model_id: string;
  cost_usd: number;
  reported_cost_usd: number;
  unpriced_tokens: number;
};
export type UserCostEntry = Omit<ModelCostEntry, "model_id"> & { user_id: string; user_email: string };

/** One row per organization and day: every scalar and breakdown the day endpoints print. */
export interface DailyTable {
  org_id: string;
  day: Day;
  rolled_up_at: Generated<Timestamp>;
  events: Count;
  billable_tokens: Count;
  input_tokens: Count;
  output_tokens: Count;
  cache_read_tokens: Count;
  cache_write_tokens: Count;
  by_model: Json<ModelEntry[]>;
  /** The day's /tokens row (docs/interface.md §2.2, by_user included) as the API prints it; null on quiet days. */
  tokens_json: string | null;
  /** md5 of tokens_json: the /tokens ETag is computed from these, not from megabytes of JSON. */
  tokens_md5: string | null;
  /** md5 of the day's /users rows in user order (migration 0011): their pages' ETag; null on days rolled up before it. */
  users_md5: string | null;
  /** tokens_json compressed by the rollup (migration 0010); null until the day is rolled up again. */
  tokens_deflate: Buffer | null;
  tokens_adler32: Count | null;
  tokens_crc32: Count | null;
  tokens_bytes: number | null;
  tool_calls: Count;
  by_tool: Json<ToolEntry[]>;
  mcp_users_with_mcp: Count;
  mcp_by_server: Json<unknown[]>;
  skills_invocations: Count;
  skills_by_name: Json<unknown[]>;
  slash_commands_invocations: Count;
  slash_commands_by_name: Json<unknown[]>;
  hooks_invocations: Count;
  hooks_by_event: Json<unknown[]>;
  web_users: Count;
  autonomy_ratio_avg: number;
  autonomy_ratio_p50: number;
  autonomy_ratio_p90: number;
  /** Distinct session_ids seen that day (any event type): the per-session averages' divisor. */
  distinct_sessions: Count;
  tool_calls_auto_high: Count;
  tool_calls_auto_medium: Count;
  tool_calls_auto_low: Count;
  tool_calls_manual: Count;
  daily_active_users: Count;
  weekly_active_users: Count;
  monthly_active_users: Count;
  daily_active_users_by_client: Json<Record<string, number>>;
  sessions: Count;
  messages: Count;
  user_messages: Count;
  files_created: Count;
  files_edited: Count;
  by_extension: Json<unknown[]>;
  by_language: Json<unknown[]>;
  git_commits: Count;
  git_prs_created: Count;
  /** /code (migration 0020): lines_changed sums and edit_decision counts, by language and user. */
  lines_added: Count;
  lines_removed: Count;
  edits_accepted: Count;
  edits_rejected: Count;
  code_by_language: Json<LanguageCodeEntry[]>;
  code_by_user: Json<UserCodeEntry[]>;
  /** /costs (migration 0020): US dollars, rounded to millionths by the rollup. */
  cost_usd: Count;
  reported_cost_usd: Count;
  unpriced_tokens: Count;
  costs_by_model: Json<ModelCostEntry[]>;
  costs_by_user: Json<UserCostEntry[]>;
}

/** The last value of a cumulative OTLP metric series (otlp/series.ts). Nanoseconds read as strings. */
export interface OtlpSeriesTable {
  org_id: string;
  /** SHA-256 (hex) of the metric name and the series' attributes. */
  series_key: string;
  start_unix_nano: ColumnType<string, string, string>;
  last_unix_nano: ColumnType<string, string, string>;
  last_value: number;
  updated_at: Timestamp;
}

export interface AnalyticsTables {
  analytics_events: EventsTable;
  analytics_event_ids: EventIdsTable;
  analytics_pending_days: PendingDaysTable;
  analytics_rollup_runs: RollupRunsTable;
  analytics_credit_multipliers: CreditMultipliersTable;
  analytics_model_prices: ModelPricesTable;
  analytics_user_model_daily: UserModelDailyTable;
  analytics_user_daily: UserDailyTable;
  analytics_daily: DailyTable;
  analytics_otlp_series: OtlpSeriesTable;
}

/** A day row of analytics_daily as read. */
export type DailyRow = Selectable<DailyTable>;
