// Frozen: never edit a migration once it has been merged; add a new one.
//
// Sessions, messages, attachments, the per-organization list clock and list history (stable
// session paging, see list-queries.ts) and stored Idempotency-Keys. Timestamps are timestamptz(3)
// so a JS Date round-trips exactly in a keyset position.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("sessions")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("org_id", "text", (c) => c.notNull().references("organizations.id").onDelete("cascade"))
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("parent_session_id", "text", (c) => c.references("sessions.id").onDelete("cascade"))
    .addColumn("title", "text")
    .addColumn("computer_id", "text")
    .addColumn("status", "text", (c) =>
      c.notNull().defaultTo("idle").check(sql`status in ('idle', 'pending', 'running')`),
    )
    .addColumn("message_count", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("settings", "jsonb", (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn("input_tokens", "double precision", (c) => c.notNull().defaultTo(0))
    .addColumn("output_tokens", "double precision", (c) => c.notNull().defaultTo(0))
    .addColumn("cache_creation_tokens", "double precision", (c) => c.notNull().defaultTo(0))
    .addColumn("cache_read_tokens", "double precision", (c) => c.notNull().defaultTo(0))
    .addColumn("thinking_tokens", "double precision", (c) => c.notNull().defaultTo(0))
    .addColumn("factory_credits", "double precision", (c) => c.notNull().defaultTo(0))
    .addColumn("client", "text", (c) => c.notNull())
    .addColumn("autonomy_mode", "text", (c) => c.notNull())
    .addColumn("created_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("completed_at", sql`timestamptz(3)`)
    .addColumn("list_version", "bigint", (c) => c.notNull())
    .addColumn("pending_since", sql`timestamptz(3)`)
    .addColumn("lease_token", "text")
    .addColumn("lease_owner", "text")
    .addColumn("lease_expires_at", sql`timestamptz(3)`)
    .addColumn("claimed_seq", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("handled_seq", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  // Keyset paging of GET /sessions: the organization's, one user's, one computer's.
  await sql`create index sessions_org_updated on sessions (org_id, updated_at desc, id desc)`.execute(db);
  await sql`create index sessions_org_user_updated on sessions (org_id, user_id, updated_at desc, id desc)`.execute(db);
  await sql`create index sessions_org_computer_updated on sessions (org_id, computer_id, updated_at desc, id desc) where computer_id is not null`.execute(
    db,
  );
  // Runners claim the longest-waiting session that is pending or whose lease expired.
  await sql`create index sessions_claimable on sessions (pending_since, id) where status <> 'idle'`.execute(db);
  await sql`create index sessions_parent on sessions (parent_session_id) where parent_session_id is not null`.execute(
    db,
  );

  await db.schema
    .createTable("session_list_clocks")
    .addColumn("org_id", "text", (c) => c.primaryKey().references("organizations.id").onDelete("cascade"))
    .addColumn("version", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("session_list_history")
    .addColumn("org_id", "text", (c) => c.notNull())
    .addColumn("session_id", "text", (c) => c.notNull().references("sessions.id").onDelete("cascade"))
    .addColumn("old_version", "bigint", (c) => c.notNull())
    .addColumn("old_updated_at", sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn("new_version", "bigint", (c) => c.notNull())
    .addColumn("superseded_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex("session_list_history_org_new")
    .on("session_list_history")
    .columns(["org_id", "new_version"])
    .execute();
  await db.schema
    .createIndex("session_list_history_session")
    .on("session_list_history")
    .columns(["session_id", "superseded_at"])
    .execute();

  await db.schema
    .createTable("messages")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("org_id", "text", (c) => c.notNull().references("organizations.id").onDelete("cascade"))
    .addColumn("session_id", "text", (c) => c.notNull().references("sessions.id").onDelete("cascade"))
    .addColumn("seq", "integer", (c) => c.notNull())
    .addColumn("role", "text", (c) => c.notNull().check(sql`role in ('user', 'assistant', 'tool', 'system')`))
    .addColumn("content", "jsonb", (c) => c.notNull())
    .addColumn("created_at", sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn("updated_at", sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn("parent_id", "text")
    .addColumn("user_message_source", "text")
    .addColumn("visibility", "text")
    .addColumn("openai_message_id", "text")
    .addColumn("openai_phase", "text")
    .addColumn("openai_encrypted_content", "text")
    .addColumn("openai_reasoning_id", "text")
    .addColumn("openai_reasoning_summary", "text")
    .addColumn("gemini_thought_signature", "text")
    .addColumn("chat_completion_reasoning_field", "text")
    .addColumn("chat_completion_reasoning_content", "text")
    .addColumn("is_user_visible", "boolean")
    .addColumn("is_error", "boolean")
    .addColumn("computer_id", "text")
    .addColumn("author_user_id", "text")
    .addUniqueConstraint("messages_session_seq", ["session_id", "seq"])
    .execute();
  await db.schema
    .createIndex("messages_session_role_seq")
    .on("messages")
    .columns(["session_id", "role", "seq"])
    .execute();

  await db.schema
    .createTable("message_attachments")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("org_id", "text", (c) => c.notNull())
    .addColumn("message_id", "text", (c) => c.notNull().references("messages.id").onDelete("cascade"))
    .addColumn("position", "integer", (c) => c.notNull())
    .addColumn("kind", "text", (c) => c.notNull().check(sql`kind in ('image', 'file')`))
    .addColumn("data", "text", (c) => c.notNull())
    .addColumn("media_type", "text")
    .addColumn("parsed_data", "text")
    .addColumn("name", "text")
    .addColumn("path", "text")
    .addColumn("size", "integer", (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex("message_attachments_message")
    .on("message_attachments")
    .columns(["message_id", "position"])
    .execute();

  await db.schema
    .createTable("idempotency_keys")
    .addColumn("org_id", "text", (c) => c.notNull().references("organizations.id").onDelete("cascade"))
    .addColumn("credential_id", "text", (c) => c.notNull())
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("request_hash", "text", (c) => c.notNull())
    .addColumn("response", "jsonb", (c) => c.notNull())
    .addColumn("created_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("idempotency_keys_pk", ["org_id", "credential_id", "key"])
    .execute();
  await db.schema.createIndex("idempotency_keys_created").on("idempotency_keys").column("created_at").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("idempotency_keys").execute();
  await db.schema.dropTable("message_attachments").execute();
  await db.schema.dropTable("messages").execute();
  await db.schema.dropTable("session_list_history").execute();
  await db.schema.dropTable("session_list_clocks").execute();
  await db.schema.dropTable("sessions").execute();
}
