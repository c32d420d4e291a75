// Frozen: never edit a migration once it has been merged; add a new one.
//
// The digest of each day's /users rows (md5 of their row_json in user order), written by the
// rollup with the day's analytics_daily row. A /users page follows from the request and the
// rows of the days in its range, so its ETag is made from these digests instead of from the
// megabytes of the page, and a 304 reads no rows; a rollup that recomputes a day to the same
// rows keeps its digest, and the clients' copies stay valid. Null for days rolled up before
// this migration: the reader then uses the day's rolled_up_at.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table analytics_daily add column users_md5 text`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table analytics_daily drop column users_md5`.execute(db);
}
