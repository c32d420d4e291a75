// Frozen: never edit a migration once it has been merged; add a new one.
//
// Computers (docs/interface.md §2.10) and their provisioning steps. Timestamps are timestamptz(3), like the
// rest of the schema, so a JS Date round-trips exactly.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("computers")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("org_id", "text", (c) => c.notNull().references("organizations.id").onDelete("cascade"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("provider_type", "text", (c) => c.notNull().check(sql`provider_type in ('byom', 'e2b')`))
    .addColumn("host_id", "uuid")
    .addColumn("hostname", "text")
    .addColumn("status", "text", (c) => c.notNull().check(sql`status in ('provisioning', 'active', 'error')`))
    .addColumn("relay_client_url", "text")
    .addColumn("relay_agent_url", "text")
    .addColumn("remote_user", "text", (c) => c.notNull())
    .addColumn("repos", "jsonb", (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn("auto_install_deps", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("sandbox_id", "text")
    .addColumn("sandbox_domain", "text")
    .addColumn("lease_owner", "text")
    .addColumn("lease_expires_at", sql`timestamptz(3)`)
    .addColumn("created_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint("computers_org_name", ["org_id", "name"])
    .execute();
  // A host is one machine serving one computer: a hostId shared across organizations would let
  // one organization receive another's host registration.
  await sql`create unique index computers_host_id on computers (host_id) where host_id is not null`.execute(db);
  // The provisioning worker's queue: e2b computers still provisioning, oldest first.
  await sql`create index computers_provisioning_queue on computers (created_at, id) where status = 'provisioning' and provider_type = 'e2b'`.execute(
    db,
  );

  await db.schema
    .createTable("computer_provisioning_steps")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("computer_id", "text", (c) => c.notNull().references("computers.id").onDelete("cascade"))
    .addColumn("org_id", "text", (c) => c.notNull().references("organizations.id").onDelete("cascade"))
    .addColumn("position", "integer", (c) => c.notNull())
    .addColumn("kind", "text", (c) =>
      c.notNull().check(sql`kind in ('register_host', 'create_sandbox', 'clone_repo', 'install_deps')`),
    )
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("repo_url", "text")
    .addColumn("repo_dir", "text")
    .addColumn("status", "text", (c) =>
      c.notNull().check(sql`status in ('pending', 'running', 'succeeded', 'failed', 'skipped')`),
    )
    .addColumn("error", "text")
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("started_at", sql`timestamptz(3)`)
    .addColumn("completed_at", sql`timestamptz(3)`)
    .addColumn("install_session_id", "text")
    .addUniqueConstraint("computer_provisioning_steps_position", ["computer_id", "position"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("computer_provisioning_steps").execute();
  await db.schema.dropTable("computers").execute();
}
