// OrganizationService.SetUserCreditLimits (public) and CreditLimitService.GetCreditBalance
// (internal, for the model gateway), built from their dependencies.
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Kysely } from "kysely";
import type {
  CreditLimitService,
  OrganizationService,
} from "../../../gen/agentplane/organization/v1alpha1/organization_pb.js";
import type { Database } from "../../database.js";
import { stopIfAbandoned } from "../../platform/abandoned.js";
import { requireRole } from "../../platform/auth.js";
import { principalOf } from "../../platform/context.js";
import { invalidArgument } from "../../platform/errors.js";
import { actingOrg } from "../../platform/tenancy.js";
import { checkEntryCount, normalizeEmail, sortEntries } from "./entries.js";
import { upsertCreditLimits } from "./queries.js";
import { readStanding } from "./standing.js";
import { findUsersByEmail } from "../queries.js";

export interface CreditLimitDeps {
  db: Kysely<Database>;
  /** The clock that picks the month; default the system clock. */
  now?: () => Date;
}

export function createCreditLimitHandlers(
  deps: CreditLimitDeps,
): Pick<ServiceImpl<typeof OrganizationService>, "setUserCreditLimits"> {
  return {
    async setUserCreditLimits(req, ctx: HandlerContext) {
      const principal = principalOf(ctx);
      requireRole(principal, ["owner", "manager"], "setting credit limits");
      checkEntryCount(req.users.length);
      const entries = req.users.map((u) => ({ email: u.email, limit: u.limit }));
      return deps.db.transaction().execute(async (trx) => {
        stopIfAbandoned(ctx.signal);
        const emails = [...new Set(entries.map((e) => normalizeEmail(e.email)).filter((e) => e !== ""))];
        const users = await findUsersByEmail(trx, principal.orgId, emails);
        const { accepted, errors } = sortEntries(entries, new Map(users.map((u) => [normalizeEmail(u.email), u.id])));
        await upsertCreditLimits(trx, principal.orgId, principal.userId, accepted);
        return { updated: accepted.map(({ email, limit }) => ({ email, limit })), errors };
      });
    },
  };
}

export function createCreditLimitService(deps: CreditLimitDeps): Partial<ServiceImpl<typeof CreditLimitService>> {
  const now = deps.now ?? (() => new Date());
  return {
    async getCreditBalance(req, ctx) {
      const orgId = actingOrg(ctx, req.orgId, "orgId");
      if (req.userId === "") throw invalidArgument("userId", "is required");
      const { limit, usedMonthToDate, remaining, periodStart } = await readStanding(
        deps.db,
        ctx.signal,
        orgId,
        req.userId,
        now(),
      );
      return { limit, usedMonthToDate, remaining, periodStart };
    },
  };
}
