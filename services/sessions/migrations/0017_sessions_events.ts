// Frozen: never edit a migration once it has been merged; add a new one.
//
// The record of each session's events (issue 20): what GET /api/v0/sessions/{id}/events streams
// and resumes from. An event is numbered within its session (seq, from 1) while the session's row
// is locked, so a session's events commit in the order of their numbers and a reader that has
// seen event n has seen every event before it: resuming after n loses nothing. The session keeps
// the number of its last event. Events go with their session when it is deleted.
//
// During a rollout the previous release's writes record no events (it does not know the table);
// its pods' changes reach the streams once they are replaced.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("sessions")
    .addColumn("last_event_seq", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable("session_events")
    .addColumn("session_id", "text", (c) => c.notNull().references("sessions.id").onDelete("cascade"))
    .addColumn("seq", "integer", (c) => c.notNull())
    .addColumn("org_id", "text", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("created_at", sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn("data", "jsonb", (c) => c.notNull())
    .addPrimaryKeyConstraint("session_events_pkey", ["session_id", "seq"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("session_events").execute();
  await db.schema.alterTable("sessions").dropColumn("last_event_seq").execute();
}
