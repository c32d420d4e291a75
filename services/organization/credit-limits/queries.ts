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

/** Removes the user's limit; false when there was none. */
export async function deleteCreditLimit(db: Executor, orgId: string, userId: string): Promise<boolean> {
  const res = await db
    .deleteFrom("user_credit_limits")
    .where("org_id", "=", orgId)
    .where("user_id", "=", userId)
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/** Keyset position of the limits list: the lowercased email, unique within an organization. */
export interface LimitPosition {
  email: string;
}

export interface LimitRow {
  user_id: string;
  email: string;
  /** lower(email), as Postgres lowercases it: the row's keyset position. */
  email_key: string;
  monthly_limit: number;
}

/** The organization's users with a limit, by lowercased email in byte order ("C" collation). */
export async function listCreditLimitsPage(
  db: Executor,
  orgId: string,
  limit: number,
  after?: LimitPosition,
): Promise<LimitRow[]> {
  const key = sql`lower(u.email) collate "C"`;
  let q = db
    .selectFrom("user_credit_limits as l")
    .innerJoin("users as u", (j) => j.onRef("u.id", "=", "l.user_id").onRef("u.org_id", "=", "l.org_id"))
    .select(["l.user_id", "u.email", "l.monthly_limit", sql<string>`lower(u.email)`.as("email_key")])
    .where("l.org_id", "=", orgId);
  if (after) q = q.where(sql<boolean>`${key} > ${after.email}`);
  return q.orderBy(key).limit(limit).execute();
}
