// Frozen: never edit a migration once it has been merged; add a new one.
//
// Each day's /tokens row compressed once by the rollup (platform/deflate-parts.ts), so the REST
// edge can answer a client that takes `Content-Encoding: deflate` with stored bytes: a 90-day
// answer for a large organization is hundreds of megabytes as text and a tenth of that
// compressed. tokens_deflate holds raw deflate blocks ending on a full flush, tokens_adler32 the
// Adler-32 of tokens_json's UTF-8 bytes and tokens_bytes their number. Null until the day is
// rolled up again (rows from before this migration): the reader then uses tokens_json.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table analytics_daily add column tokens_deflate bytea, add column tokens_adler32 bigint, add column tokens_bytes integer`.execute(
    db,
  );
  // Already compressed: Postgres' own compression would only cost time.
  await sql`alter table analytics_daily alter column tokens_deflate set storage external`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table analytics_daily drop column tokens_deflate, drop column tokens_adler32, drop column tokens_bytes`.execute(
    db,
  );
}
