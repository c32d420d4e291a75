// Frozen: never edit a migration once it has been merged; add a new one.
//
// The last value of each cumulative OTLP metric series (otlp/series.ts): a cumulative data point
// carries the total since its start time, and what it adds is its value less the series' last
// one. Kept in Postgres, so that a restarted receiver (or another replica) goes on from the last
// value instead of counting the whole total again. A series is one metric of one organization
// with one set of attributes (resource's and data point's), named by a hash of them. Times are
// Unix nanoseconds as decimal text: past 2^53, which a bigint read as a number would round.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table analytics_otlp_series (
      org_id text not null,
      series_key text not null,
      start_unix_nano text not null,
      last_unix_nano text not null,
      last_value double precision not null,
      updated_at timestamptz not null default now(),
      primary key (org_id, series_key)
    )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table analytics_otlp_series`.execute(db);
}
