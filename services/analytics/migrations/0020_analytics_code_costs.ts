// Frozen: never edit a migration once it has been merged; add a new one.
//
// /code and /costs (docs/analytics.md). The price table, per model and per million tokens, that
// the rollup applies to usage without a client-reported cost (like the credit multipliers, a
// change counts for the days rolled up afterwards). The rollup's aggregates: each user's cost per
// model and day beside its tokens, and on the day rows the code counts, the day's cost and their
// breakdowns, so that both endpoints read one row per day like the others. Days rolled up before
// this migration read as zeros until they are rolled up again.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table analytics_model_prices (
      model_id text primary key,
      input_per_million numeric not null check (input_per_million >= 0),
      output_per_million numeric not null check (output_per_million >= 0),
      cache_read_per_million numeric not null check (cache_read_per_million >= 0),
      cache_write_per_million numeric not null check (cache_write_per_million >= 0),
      updated_at timestamptz(3) not null default now()
    )`.execute(db);
  await sql`
    alter table analytics_user_model_daily
      add column cost_usd numeric not null default 0,
      add column reported_cost_usd numeric not null default 0,
      add column unpriced_tokens bigint not null default 0`.execute(db);
  await sql`
    alter table analytics_daily
      add column lines_added bigint not null default 0,
      add column lines_removed bigint not null default 0,
      add column edits_accepted bigint not null default 0,
      add column edits_rejected bigint not null default 0,
      add column code_by_language jsonb not null default '[]',
      add column code_by_user jsonb not null default '[]',
      add column cost_usd numeric not null default 0,
      add column reported_cost_usd numeric not null default 0,
      add column unpriced_tokens bigint not null default 0,
      add column costs_by_model jsonb not null default '[]',
      add column costs_by_user jsonb not null default '[]'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    alter table analytics_daily
      drop column lines_added, drop column lines_removed, drop column edits_accepted, drop column edits_rejected,
      drop column code_by_language, drop column code_by_user, drop column cost_usd, drop column reported_cost_usd,
      drop column unpriced_tokens, drop column costs_by_model, drop column costs_by_user`.execute(db);
  await sql`
    alter table analytics_user_model_daily
      drop column cost_usd, drop column reported_cost_usd, drop column unpriced_tokens`.execute(db);
  await sql`drop table analytics_model_prices`.execute(db);
}
