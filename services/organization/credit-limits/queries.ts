// Repository functions of per-user credit limits, scoped by organization.
import { sql } from "kysely";
import type { Executor } from "../../database.js";

export async function upsertCreditLimits(
  db: Executor,
  orgId: string,
  updatedBy: string,
  limits: readonly { userId: string; limit: number }[],
): Promise<void> {
  if (limits.length === 0) return;
  const now = new Date();
  await db
    .insertInto("user_credit_limits")
    .values(
      limits.map((l) => ({
        org_id: orgId,
        user_id: l.userId,
        monthly_limit: l.limit,
        updated_at: now,
        updated_by: updatedBy,
      })),
    )
    .onConflict((oc) =>
      oc.columns(["org_id", "user_id"]).doUpdateSet({
        monthly_limit: sql`excluded.monthly_limit`,
        updated_at: sql`excluded.updated_at`,
        updated_by: sql`excluded.updated_by`,
      }),
    )
    .execute();
}

/** The user's monthly limit, or undefined when none is set (unlimited). */
export async function findCreditLimit(db: Executor, orgId: string, userId: string): Promise<number | undefined> {
  const row = await db
    .selectFrom("user_credit_limits")
    .select("monthly_limit")
    .where("org_id", "=", orgId)
    .where("user_id", "=", userId)
    .executeTakeFirst();
  return row?.monthly_limit;
}
