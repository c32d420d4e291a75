// Frozen: never edit a migration once it has been merged; add a new one.
//
// Sandboxes to stop: deleting an e2b computer leaves its E2B sandbox running (then paused, which
// E2B keeps) unless something stops it. The delete records the computer here, in its own
// transaction, and the provisioning worker stops every sandbox E2B lists for the computer, then
// looks once more a while later (a worker that was creating the sandbox when the computer was
// deleted may have finished after the first look) before the row goes.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("computer_sandbox_reaps")
    .addColumn("computer_id", "text", (c) => c.primaryKey())
    .addColumn("org_id", "text", (c) => c.notNull())
    .addColumn("sandbox_id", "text")
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("next_attempt_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("last_error", "text")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`create index computer_sandbox_reaps_due on computer_sandbox_reaps (next_attempt_at)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("computer_sandbox_reaps").execute();
}
