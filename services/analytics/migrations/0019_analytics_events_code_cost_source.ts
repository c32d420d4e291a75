// Frozen: never edit a migration once it has been merged; add a new one.
//
// The event format gains lines_changed (lines_added, lines_removed; path and language reuse the
// file_op columns), edit_decision (decision; tool and language reuse their columns) and the
// client-reported cost of model_usage (cost_usd, a double like the wire's number). `source` says
// where a row came from: our own format ('native'), or an OpenTelemetry metric data point or log
// record mapped onto it by the OTLP receiver; the rollup counts tokens reported both ways once.
// Added on the partitioned parent, the columns reach every partition, present and future; with a
// constant default (and nulls elsewhere) Postgres rewrites no partition.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    alter table analytics_events
      add column lines_added bigint,
      add column lines_removed bigint,
      add column decision text,
      add column cost_usd double precision,
      add column source text not null default 'native'
        constraint analytics_events_source check (source in ('native', 'otlp_metric', 'otlp_log'))`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    alter table analytics_events
      drop column source,
      drop column cost_usd,
      drop column decision,
      drop column lines_removed,
      drop column lines_added`.execute(db);
}
