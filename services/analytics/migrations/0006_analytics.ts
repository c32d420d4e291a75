// Frozen: never edit a migration once it has been merged; add a new one.
//
// Raw telemetry is range-partitioned by month on occurred_at: a day's rollup scans one partition
// slice through (org_id, occurred_at), and old months can be detached or dropped whole. Partitions
// are created on demand by the ingest path (partitions.ts), so this migration creates none.
// Identifier-like columns of the aggregates use the "C" collation: /users pages by user ID and
// breakdowns sort by key in byte order on every server, whatever its default collation.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table analytics_events (
      org_id text not null,
      occurred_at timestamptz(3) not null,
      user_id text not null,
      user_email text,
      session_id text,
      client text not null,
      type text not null,
      autonomy text,
      role text,
      model_id text,
      model_tier text,
      input_tokens bigint,
      output_tokens bigint,
      cache_read_tokens bigint,
      cache_write_tokens bigint,
      tool text,
      mcp_server text,
      name text,
      hook_event text,
      hook_matcher text,
      hook_command text,
      op text,
      path text,
      extension text,
      language text,
      event_id text
    ) partition by range (occurred_at)`.execute(db);
  // The rollup reads one organization's day; the delegation fallback looks up a user's latest
  // earlier session_start (a small partial index: session starts are a few percent of events).
  await sql`create index analytics_events_org_time on analytics_events (org_id, occurred_at)`.execute(db);
  await sql`create index analytics_events_session_starts on analytics_events (org_id, user_id, occurred_at) where type = 'session_start'`.execute(
    db,
  );

  // Idempotency must hold across partitions (an event_id resent with another time is still a
  // duplicate), which a unique index on a partitioned table cannot enforce: hence its own table.
  await sql`
    create table analytics_event_ids (
      org_id text not null,
      event_id text not null,
      primary key (org_id, event_id)
    )`.execute(db);

  await sql`
    create table analytics_pending_days (
      org_id text not null,
      day date not null,
      touched_at timestamptz(3) not null default now(),
      primary key (org_id, day)
    )`.execute(db);

  await sql`
    create table analytics_rollup_runs (
      day date primary key,
      finished_at timestamptz(3) not null default now()
    )`.execute(db);

  await sql`
    create table analytics_credit_multipliers (
      model_id text primary key,
      multiplier numeric not null check (multiplier >= 0),
      updated_at timestamptz(3) not null default now()
    )`.execute(db);

  await sql`
    create table analytics_user_model_daily (
      org_id text not null,
      day date not null,
      user_id text collate "C" not null,
      model_id text collate "C" not null,
      model_tier text not null,
      input_tokens bigint not null,
      output_tokens bigint not null,
      cache_read_tokens bigint not null,
      cache_write_tokens bigint not null,
      billable_tokens numeric not null,
      primary key (org_id, day, user_id, model_id)
    )`.execute(db);

  await sql`
    create table analytics_user_daily (
      org_id text not null,
      day date not null,
      user_id text collate "C" not null,
      user_email text,
      events bigint not null,
      tool_calls bigint not null,
      mcp_calls bigint not null,
      skill_calls bigint not null,
      slash_commands bigint not null,
      hooks bigint not null,
      sessions bigint not null,
      messages bigint not null,
      user_messages bigint not null,
      assistant_messages bigint not null,
      files_created bigint not null,
      files_edited bigint not null,
      git_commits bigint not null,
      git_prs_created bigint not null,
      billable_tokens numeric not null,
      primary_model text not null,
      primary_model_tier text not null,
      delegation_level text not null,
      languages text[] not null,
      clients smallint not null,
      primary key (org_id, user_id, day)
    )`.execute(db);
  // Day-wise reads (rollup totals, active-user windows); the primary key serves /users paging.
  await sql`create index analytics_user_daily_org_day on analytics_user_daily (org_id, day)`.execute(db);

  await sql`
    create table analytics_daily (
      org_id text not null,
      day date not null,
      rolled_up_at timestamptz(3) not null default now(),
      events bigint not null default 0,
      billable_tokens numeric not null default 0,
      input_tokens bigint not null default 0,
      output_tokens bigint not null default 0,
      cache_read_tokens bigint not null default 0,
      cache_write_tokens bigint not null default 0,
      by_model jsonb not null default '[]',
      by_user jsonb not null default '[]',
      tool_calls bigint not null default 0,
      by_tool jsonb not null default '[]',
      mcp_users_with_mcp bigint not null default 0,
      mcp_by_server jsonb not null default '[]',
      skills_invocations bigint not null default 0,
      skills_by_name jsonb not null default '[]',
      slash_commands_invocations bigint not null default 0,
      slash_commands_by_name jsonb not null default '[]',
      hooks_invocations bigint not null default 0,
      hooks_by_event jsonb not null default '[]',
      web_users bigint not null default 0,
      autonomy_ratio_avg double precision not null default 0,
      autonomy_ratio_p50 double precision not null default 0,
      autonomy_ratio_p90 double precision not null default 0,
      distinct_sessions bigint not null default 0,
      tool_calls_auto_high bigint not null default 0,
      tool_calls_auto_medium bigint not null default 0,
      tool_calls_auto_low bigint not null default 0,
      tool_calls_manual bigint not null default 0,
      daily_active_users bigint not null default 0,
      weekly_active_users bigint not null default 0,
      monthly_active_users bigint not null default 0,
      daily_active_users_by_client jsonb not null default '{}',
      sessions bigint not null default 0,
      messages bigint not null default 0,
      user_messages bigint not null default 0,
      files_created bigint not null default 0,
      files_edited bigint not null default 0,
      by_extension jsonb not null default '[]',
      by_language jsonb not null default '[]',
      git_commits bigint not null default 0,
      git_prs_created bigint not null default 0,
      primary key (org_id, day)
    )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    "analytics_daily",
    "analytics_user_daily",
    "analytics_user_model_daily",
    "analytics_credit_multipliers",
    "analytics_rollup_runs",
    "analytics_pending_days",
    "analytics_event_ids",
    "analytics_events",
  ]) {
    await sql`drop table if exists ${sql.table(table)} cascade`.execute(db);
  }
}
