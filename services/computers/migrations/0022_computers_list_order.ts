// Frozen: never edit a migration once it has been merged; add a new one.
//
// The computers list (GET /api/v0/computers) pages an organization's computers oldest first by
// (created_at, id). Without an index in that order, every page read all of the organization's
// computers and sorted them; with it a page reads `limit` rows from its keyset position on.
// Built concurrently would need a migration outside a transaction; the table is small per
// organization, and the build holds its lock for moments, not the length of a rollout.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index computers_org_list_order on computers (org_id, created_at, id)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists computers_org_list_order`.execute(db);
}
