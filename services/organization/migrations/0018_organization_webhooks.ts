// Frozen: never edit a migration once it has been merged; add a new one.
//
// Signed webhooks (issue 20): an organization's endpoints, and an outbox of deliveries that the
// dispatcher (services/organization/webhooks/dispatcher.ts) sends, retries and records.
//
// Deliveries are written by triggers, in the transaction of the change they report, whichever
// code made it: a session event (session_events, migration 0017) and a computer's status change.
// So an event that happened is never missing from the outbox, and one that rolled back never
// enters it. Each delivery's payload is the Standard Webhooks body {type, timestamp, data}; its
// id (msg_…) is the webhook-id a receiver drops duplicates by. A notification on
// agentplane_webhooks at commit wakes the dispatchers.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("webhook_endpoints")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("org_id", "text", (c) => c.notNull().references("organizations.id").onDelete("cascade"))
    .addColumn("url", "text", (c) => c.notNull())
    .addColumn("events", sql`text[]`, (c) => c.notNull())
    .addColumn("description", "text", (c) => c.notNull())
    // The signing secret (whsec_…): kept, since every delivery is signed with it.
    .addColumn("secret", "text", (c) => c.notNull())
    .addColumn("created_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex("webhook_endpoints_org_created")
    .on("webhook_endpoints")
    .columns(["org_id", "created_at", "id"])
    .execute();

  await db.schema
    .createTable("webhook_deliveries")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("org_id", "text", (c) => c.notNull())
    .addColumn("endpoint_id", "text", (c) => c.notNull().references("webhook_endpoints.id").onDelete("cascade"))
    .addColumn("event_type", "text", (c) => c.notNull())
    .addColumn("payload", "jsonb", (c) => c.notNull())
    // pending (to send or retry), succeeded, failed (the retry budget is spent).
    .addColumn("status", "text", (c) => c.notNull().defaultTo("pending"))
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("last_http_status", "integer")
    .addColumn("last_error", "text")
    .addColumn("next_attempt_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("created_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("completed_at", sql`timestamptz(3)`)
    .execute();
  await sql`create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending'`.execute(
    db,
  );
  await db.schema
    .createIndex("webhook_deliveries_endpoint_created")
    .on("webhook_deliveries")
    .columns(["endpoint_id", "created_at", "id"])
    .execute();

  await sql`
    create function agentplane_enqueue_webhooks(p_org text, p_type text, p_time timestamptz, p_data jsonb)
    returns void language plpgsql as $$
    declare
      queued integer;
    begin
      insert into webhook_deliveries (id, org_id, endpoint_id, event_type, payload)
      select 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.org_id, e.id, p_type,
             jsonb_build_object(
               'type', p_type,
               'timestamp', to_char(p_time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'data', p_data)
      from webhook_endpoints e
      where e.org_id = p_org and p_type = any (e.events);
      get diagnostics queued = row_count;
      if queued > 0 then
        perform pg_notify('agentplane_webhooks', p_org);
      end if;
    end
    $$`.execute(db);
  await sql`
    create function agentplane_session_event_webhooks() returns trigger language plpgsql as $$
    begin
      perform agentplane_enqueue_webhooks(new.org_id, new.type, new.created_at,
        jsonb_build_object('sessionId', new.session_id, 'eventId', new.seq::text) || new.data);
      return null;
    end
    $$`.execute(db);
  await sql`create trigger session_events_webhooks after insert on session_events
    for each row execute function agentplane_session_event_webhooks()`.execute(db);
  await sql`
    create function agentplane_computer_status_webhooks() returns trigger language plpgsql as $$
    begin
      if new.status is distinct from old.status then
        perform agentplane_enqueue_webhooks(new.org_id, 'computer.status_changed', clock_timestamp(),
          jsonb_build_object('computerId', new.id, 'name', new.name, 'status', new.status,
                             'previousStatus', old.status));
      end if;
      return null;
    end
    $$`.execute(db);
  await sql`create trigger computers_status_webhooks after update of status on computers
    for each row execute function agentplane_computer_status_webhooks()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists computers_status_webhooks on computers`.execute(db);
  await sql`drop trigger if exists session_events_webhooks on session_events`.execute(db);
  await sql`drop function if exists agentplane_computer_status_webhooks()`.execute(db);
  await sql`drop function if exists agentplane_session_event_webhooks()`.execute(db);
  await sql`drop function if exists agentplane_enqueue_webhooks(text, text, timestamptz, jsonb)`.execute(db);
  await db.schema.dropTable("webhook_deliveries").execute();
  await db.schema.dropTable("webhook_endpoints").execute();
}
