// Frozen: never edit a migration once it has been merged; add a new one.
//
// Per-user monthly credit limits. A user without a row has no limit.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("user_credit_limits")
    .addColumn("org_id", "text", (c) => c.notNull().references("organizations.id").onDelete("cascade"))
    .addColumn("user_id", "text", (c) => c.notNull().references("users.id").onDelete("cascade"))
    .addColumn("monthly_limit", "double precision", (c) =>
      c.notNull().check(sql`monthly_limit >= 0 and monthly_limit < 'Infinity'::float8`),
    )
    .addColumn("updated_at", sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_by", "text")
    .addPrimaryKeyConstraint("user_credit_limits_pkey", ["org_id", "user_id"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("user_credit_limits").execute();
}
