// Frozen: never edit a migration once it has been merged; add a new one.
//
// Pending marks become an append-only log: one row per (organization, day) per ingest that
// stored events of that past day, no longer one row per (organization, day) upserted by every
// ingest. The upsert locked the day's row until the ingest committed, so concurrent batches of
// one organization's day (a backfill, several collectors) queued behind each other's commit
// (its WAL flush). The rollup's interlock still holds: it deletes the marks its repeatable-read
// snapshot sees, and a mark committed after that snapshot, whose events the snapshot did not
// see either, is invisible to the delete and stays for the next rollup.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table analytics_pending_days drop constraint analytics_pending_days_pkey`.execute(db);
  await sql`create index analytics_pending_days_org_day on analytics_pending_days (org_id, day)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index analytics_pending_days_org_day`.execute(db);
  // Back to one row per (organization, day): keep the newest mark of each.
  await sql`
    delete from analytics_pending_days a using analytics_pending_days b
    where a.org_id = b.org_id and a.day = b.day and (a.touched_at, a.ctid) < (b.touched_at, b.ctid)`.execute(db);
  await sql`alter table analytics_pending_days add primary key (org_id, day)`.execute(db);
}
