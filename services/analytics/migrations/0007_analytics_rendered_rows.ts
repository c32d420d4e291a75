// Frozen: never edit a migration once it has been merged; add a new one.
//
// Pre-rendered JSON of the two large analytics responses, written by the rollup, so a request
// reads stored text instead of having thousands of JSON objects rendered and rebuilt:
// - analytics_daily.tokens_json: the day's whole /tokens row (docs/metrics.md, "/tokens"),
//   by_user included, exactly as the API prints it; tokens_md5 its digest, from which the
//   response's ETag is computed without hashing megabytes. Null on rows without a rollup (quiet
//   days that only carry weekly and monthly active users): the reader prints the zero row.
// - analytics_user_daily.row_json: the /users row (docs/interface.md §2.6) of that user and day.
// The by_user jsonb column is superseded by tokens_json (which holds the same entries) and
// dropped after existing rows are carried over, so rolled-up days need no new rollup.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table analytics_daily add column tokens_json text, add column tokens_md5 text`.execute(db);
  await sql`alter table analytics_user_daily add column row_json text`.execute(db);
  // Large values: stored uncompressed out of line, so a read copies them instead of inflating.
  await sql`alter table analytics_daily alter column tokens_json set storage external`.execute(db);

  await sql`
    update analytics_daily set tokens_json = json_build_object(
        'date', day, 'billable_tokens', round(billable_tokens, 2), 'input_tokens', input_tokens,
        'output_tokens', output_tokens, 'cache_read_tokens', cache_read_tokens, 'cache_write_tokens', cache_write_tokens,
        'by_model', by_model, 'by_user', by_user)::text
    where daily_active_users > 0`.execute(db);
  await sql`update analytics_daily set tokens_md5 = md5(tokens_json) where tokens_json is not null`.execute(db);
  await sql`
    update analytics_user_daily set row_json = json_build_object(
        'user_id', user_id, 'user_email', user_email, 'date', day, 'tool_calls', tool_calls,
        'billable_tokens', round(billable_tokens, 2), 'primary_model', primary_model, 'primary_model_tier', primary_model_tier,
        'files_created', files_created, 'files_edited', files_edited, 'git_commits', git_commits, 'git_prs_created', git_prs_created,
        'mcp_calls', mcp_calls, 'skill_calls', skill_calls, 'slash_commands', slash_commands, 'hooks', hooks,
        'sessions', sessions, 'messages', messages, 'user_messages', user_messages, 'assistant_messages', assistant_messages,
        'autonomy_ratio', case when user_messages > 0 then tool_calls::float8 / user_messages else 0 end,
        'delegation_level', delegation_level, 'languages', languages)::text`.execute(db);
  await sql`alter table analytics_user_daily alter column row_json set not null`.execute(db);
  await sql`alter table analytics_daily drop column by_user`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table analytics_daily add column by_user jsonb not null default '[]'`.execute(db);
  await sql`update analytics_daily set by_user = (tokens_json::jsonb)->'by_user' where tokens_json is not null`.execute(
    db,
  );
  await sql`alter table analytics_daily drop column tokens_json, drop column tokens_md5`.execute(db);
  await sql`alter table analytics_user_daily drop column row_json`.execute(db);
}
