// Frozen: never edit a migration once it has been merged; add a new one.
//
// Readiness repositories and reports. Timestamps are timestamptz(3) so a JS Date round-trips
// exactly in the (created_at, id) keyset position of the report list.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("readiness_repositories")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("org_id", "text", (c) => c.notNull().references("organizations.id").onDelete("cascade"))
    .addColumn("url", "text", (c) => c.notNull())
    .addColumn("created_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    // One record per normalized URL per organization (the submit upsert relies on it).
    .addUniqueConstraint("readiness_repositories_org_url", ["org_id", "url"])
    // Target of the reports' composite foreign key: a report's repository is in its organization.
    .addUniqueConstraint("readiness_repositories_org_id", ["org_id", "id"])
    .execute();

  await db.schema
    .createTable("readiness_reports")
    .addColumn("id", "text", (c) => c.notNull())
    .addColumn("org_id", "text", (c) => c.notNull().references("organizations.id").onDelete("cascade"))
    .addColumn("repository_id", "text", (c) => c.notNull())
    .addColumn("created_at", sql`timestamptz(3)`, (c) => c.notNull())
    .addColumn("stored_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("repo_url", "text", (c) => c.notNull())
    .addColumn("apps", "jsonb", (c) => c.notNull())
    .addColumn("criteria", "jsonb", (c) => c.notNull())
    .addColumn("commit_hash", "text")
    .addColumn("branch", "text")
    .addColumn("has_local_changes", "boolean")
    .addColumn("has_non_remote_commits", "boolean")
    .addColumn("model_id", "text")
    .addColumn("reasoning_effort", "text", (c) => c.check(sql`reasoning_effort in ('low', 'medium', 'high', 'off')`))
    .addColumn("droid_version", "text")
    // Report IDs are unique per organization, so one organization's IDs reveal nothing about another's.
    .addPrimaryKeyConstraint("readiness_reports_pk", ["org_id", "id"])
    .addForeignKeyConstraint(
      "readiness_reports_repository",
      ["org_id", "repository_id"],
      "readiness_repositories",
      ["org_id", "id"],
      (c) => c.onDelete("cascade"),
    )
    .addCheckConstraint("readiness_reports_model", sql`(model_id is null) = (reasoning_effort is null)`)
    .execute();
  // The organization's list, newest first (scanned backwards).
  await db.schema
    .createIndex("readiness_reports_org_created")
    .on("readiness_reports")
    .columns(["org_id", "created_at", "id"])
    .execute();
  // One repository's list, and each report's predecessor for changesSincePrevious.
  await db.schema
    .createIndex("readiness_reports_repository_created")
    .on("readiness_reports")
    .columns(["repository_id", "created_at", "id"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("readiness_reports").execute();
  await db.schema.dropTable("readiness_repositories").execute();
}
