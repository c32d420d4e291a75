// A user's credit standing: their limit, the credits used this month and what remains, read from
// one snapshot so that `remaining` is computed from matching figures. GetCreditBalance (internal),
// GetMyCreditLimit and ListUserCreditLimits (public) all answer from here.
import type { Kysely } from "kysely";
import type { Database } from "../../database.js";
import { stopIfAbandoned } from "../../platform/abandoned.js";
import { notFound } from "../../platform/errors.js";
import { findUser, type UserRow } from "../queries.js";
import { creditsUsedThisMonth, creditsUsedThisMonthByUser, monthBounds } from "./balance.js";
import { findCreditLimit, listCreditLimitsPage, type LimitPosition, type LimitRow } from "./queries.js";

export interface CreditStanding {
  /** Absent when the user has no limit. */
  limit: number | undefined;
  usedMonthToDate: number;
  /** limit - used, never below 0; absent without a limit. */
  remaining: number | undefined;
}

export function standingOf(limit: number | undefined, used: number): CreditStanding {
  return { limit, usedMonthToDate: used, remaining: limit === undefined ? undefined : Math.max(0, limit - used) };
}

/** The user's standing at `at`; NOT_FOUND when the user is not in the organization. */
export async function readStanding(
  db: Kysely<Database>,
  signal: AbortSignal,
  orgId: string,
  userId: string,
  at: Date,
): Promise<CreditStanding & { user: UserRow; periodStart: string }> {
  return db
    .transaction()
    .setIsolationLevel("repeatable read")
    .execute(async (trx) => {
      stopIfAbandoned(signal);
      const user = await findUser(trx, orgId, userId);
      if (!user) throw notFound("user");
      const limit = await findCreditLimit(trx, orgId, userId);
      const used = await creditsUsedThisMonth(trx, orgId, userId, at);
      return { ...standingOf(limit, used), user, periodStart: monthBounds(at).start };
    });
}

/** Up to `count` users with a limit after `after`, each with their standing at `at`. */
export async function readStandingsPage(
  db: Kysely<Database>,
  signal: AbortSignal,
  orgId: string,
  count: number,
  after: LimitPosition | undefined,
  at: Date,
): Promise<(LimitRow & CreditStanding)[]> {
  return db
    .transaction()
    .setIsolationLevel("repeatable read")
    .execute(async (trx) => {
      stopIfAbandoned(signal);
      const rows = await listCreditLimitsPage(trx, orgId, count, after);
      const used = await creditsUsedThisMonthByUser(
        trx,
        orgId,
        rows.map((r) => r.user_id),
        at,
      );
      return rows.map((r) => ({ ...r, ...standingOf(r.monthly_limit, used.get(r.user_id) ?? 0) }));
    });
}
