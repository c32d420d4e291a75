// OrganizationService's credit-limit reads and removal (public): ListUserCreditLimits
// (GET /api/v0/organization/usage/limits/users), DeleteUserCreditLimit (DELETE
// .../limits/users/{email}, 204) and GetMyCreditLimit (GET .../limits/me). organization.proto
// says what each does.
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { OrganizationService } from "../../../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { stopIfAbandoned } from "../../platform/abandoned.js";
import { requireRole } from "../../platform/auth.js";
import { principalOf } from "../../platform/context.js";
import { keysetPage, parsePageLimit, type CursorStore } from "../../platform/cursors.js";
import { invalidArgument, notFound } from "../../platform/errors.js";
import { findUsersByEmail } from "../queries.js";
import { normalizeEmail } from "./entries.js";
import type { CreditLimitDeps } from "./handlers.js";
import { deleteCreditLimit, type LimitPosition } from "./queries.js";
import { readStanding, readStandingsPage } from "./standing.js";

const LIMITS_SCOPE = { list: "organization.usage.limits.users" } as const;
const MANAGERS = ["owner", "manager"] as const;

type ReadMethods = Pick<
  ServiceImpl<typeof OrganizationService>,
  "listUserCreditLimits" | "deleteUserCreditLimit" | "getMyCreditLimit"
>;

export function createCreditLimitReadHandlers(deps: CreditLimitDeps & { cursors: CursorStore }): ReadMethods {
  const now = deps.now ?? (() => new Date());
  return {
    async listUserCreditLimits(req, ctx: HandlerContext) {
      const principal = principalOf(ctx);
      requireRole(principal, MANAGERS, "reading credit limits");
      const limit = parsePageLimit(req.limit);
      const at = now();
      const { rows, pagination } = await keysetPage({
        cursors: deps.cursors,
        principal,
        scope: LIMITS_SCOPE,
        cursor: req.cursor,
        limit,
        fetch: (count, after: LimitPosition | undefined) =>
          readStandingsPage(deps.db, ctx.signal, principal.orgId, count, after, at),
        positionOf: (last): LimitPosition => ({ email: last.email_key }),
      });
      return {
        users: rows.map((r) => ({
          email: r.email,
          limit: r.limit,
          usedMonthToDate: r.usedMonthToDate,
          remaining: r.remaining,
        })),
        pagination,
      };
    },

    async deleteUserCreditLimit(req, ctx: HandlerContext) {
      const principal = principalOf(ctx);
      requireRole(principal, MANAGERS, "removing credit limits");
      const email = normalizeEmail(req.email);
      if (email === "") throw invalidArgument("email", "is required");
      await deps.db.transaction().execute(async (trx) => {
        stopIfAbandoned(ctx.signal);
        const [user] = await findUsersByEmail(trx, principal.orgId, [email]);
        if (!user) throw notFound("user with this email");
        // No limit to remove is the outcome asked for: 204 as well (organization.proto).
        await deleteCreditLimit(trx, principal.orgId, user.id);
      });
      ctx.responseHeader.set("x-http-code", "204");
      return {};
    },

    async getMyCreditLimit(_req, ctx: HandlerContext) {
      const principal = principalOf(ctx);
      const standing = await readStanding(deps.db, ctx.signal, principal.orgId, principal.userId, now());
      return {
        email: standing.user.email,
        limit: standing.limit,
        usedMonthToDate: standing.usedMonthToDate,
        remaining: standing.remaining,
      };
    },
  };
}
