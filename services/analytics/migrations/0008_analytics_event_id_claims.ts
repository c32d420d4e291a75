// Frozen: never edit a migration once it has been merged; add a new one.
//
// The idempotency claims (analytics_event_ids) are keyed by (event_id, org_id) instead of
// (org_id, event_id), in the "C" collation: every stored event with an id inserts one claim, and
// the ingest's cost is mostly this index and the events' own. With the event_id first, almost
// every comparison on the way down the index is decided by the first column (ids are distinct;
// with the org first, the comparison of two equal org ids came first every time); the "C"
// collation compares bytes, never through the server's locale (the key only has to be unique,
// not sorted for people). Same uniqueness, same constraint name; existing claims are kept (the
// index is rebuilt over them).
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table analytics_event_ids drop constraint analytics_event_ids_pkey`.execute(db);
  await sql`alter table analytics_event_ids alter column org_id type text collate "C", alter column event_id type text collate "C"`.execute(
    db,
  );
  await sql`alter table analytics_event_ids add constraint analytics_event_ids_pkey primary key (event_id, org_id)`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table analytics_event_ids drop constraint analytics_event_ids_pkey`.execute(db);
  await sql`alter table analytics_event_ids alter column org_id type text collate "default", alter column event_id type text collate "default"`.execute(
    db,
  );
  await sql`alter table analytics_event_ids add constraint analytics_event_ids_pkey primary key (org_id, event_id)`.execute(
    db,
  );
}
