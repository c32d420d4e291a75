// Frozen: never edit a migration once it has been merged; add a new one.
//
// Workload credentials (service accounts) for the internal gRPC services, and a notification on
// every change that can revoke or alter a cached credential, so each replica's authenticator
// drops it at once instead of at its cache TTL (services/organization/credential-changes.ts).
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("service_accounts")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull())
    // Null: the account may act for any organization the request names (a platform component).
    .addColumn("org_id", "text", (c) => c.references("organizations.id").onDelete("cascade"))
    .addColumn("scopes", sql`text[]`, (c) => c.notNull())
    .addColumn("token_hash", "text", (c) => c.notNull().unique())
    .addColumn("prefix", "text", (c) => c.notNull())
    .addColumn("created_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("revoked_at", sql`timestamptz(3)`)
    .execute();

  // One channel, payloads "user:<id>", "org:<id>", "account:<id>": what a cached principal was
  // resolved from. Sent at commit, so a replica never drops an entry before the change is visible.
  await sql`
    create function agentplane_notify_credential_change() returns trigger language plpgsql as $$
    declare
      doc jsonb;
    begin
      if tg_op = 'DELETE' then doc := to_jsonb(old); else doc := to_jsonb(new); end if;
      -- tg_argv: the subject's kind and the column holding its id.
      perform pg_notify('agentplane_credentials', tg_argv[0] || ':' || (doc ->> tg_argv[1]));
      return null;
    end
    $$`.execute(db);
  await sql`create trigger api_keys_credential_change after update or delete on api_keys
    for each row execute function agentplane_notify_credential_change('user', 'user_id')`.execute(db);
  await sql`create trigger users_credential_change after update of role or delete on users
    for each row execute function agentplane_notify_credential_change('user', 'id')`.execute(db);
  await sql`create trigger organizations_credential_change after update of plan, rate_limit_per_minute or delete on organizations
    for each row execute function agentplane_notify_credential_change('org', 'id')`.execute(db);
  await sql`create trigger service_accounts_credential_change after update or delete on service_accounts
    for each row execute function agentplane_notify_credential_change('account', 'id')`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ["api_keys", "users", "organizations", "service_accounts"]) {
    await sql`drop trigger if exists ${sql.raw(`${table}_credential_change`)} on ${sql.table(table)}`.execute(db);
  }
  await sql`drop function if exists agentplane_notify_credential_change()`.execute(db);
  await db.schema.dropTable("service_accounts").execute();
}
