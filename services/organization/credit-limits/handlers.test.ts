// SetUserCreditLimits through an in-memory router transport, over a real test database.
import {
  Code,
  ConnectError,
  createClient,
  createRouterTransport,
  type Client,
  type Interceptor,
} from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CreditLimitService,
  OrganizationService,
} from "../../../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { ingestEvents } from "../../analytics/ingest/ingest.js";
import { rollupOrganization } from "../../analytics/rollup/rollup.js";
import { createTestDatabase, testLogger, type TestDatabase } from "../../../test/support/database.js";
import { handlerTransport } from "../../../test/support/handlers.js";
import type { Database } from "../../database.js";
import { migrations } from "../../migrations.js";
import { kPrincipal, type Role } from "../../platform/context.js";
import { requestContextInterceptor } from "../../platform/request-context.js";
import { findCreditLimit } from "./queries.js";
import { createCreditLimitHandlers, createCreditLimitService } from "./handlers.js";
import { creditsUsedThisMonth, monthBounds } from "./balance.js";
import { ENTRY_ERRORS } from "./entries.js";
import { createOrganization, createUser } from "../queries.js";

describe("credit-limit handlers", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  let ada: string;
  let grace: string;
  let as: (role: Role) => Client<typeof OrganizationService>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    orgId = (await createOrganization(database.db, { name: "Limits" })).id;
    ada = (await createUser(database.db, { orgId, email: "Ada@Example.com", role: "owner" })).id;
    grace = (await createUser(database.db, { orgId, email: "grace@example.com", role: "member" })).id;
    as = (role) => {
      const asCaller: Interceptor = (next) => (req) => {
        req.contextValues.set(kPrincipal, {
          orgId,
          userId: ada,
          role,
          credentialKind: "api_key",
          credentialId: "key:1",
          rateLimitPerMinute: 1000,
        });
        return next(req);
      };
      return createClient(
        OrganizationService,
        createRouterTransport(
          (router) => router.service(OrganizationService, createCreditLimitHandlers({ db: database.db })),
          {
            router: { interceptors: [requestContextInterceptor(testLogger()), asCaller] },
          },
        ),
      );
    };
  });
  afterAll(() => database?.drop());

  it("stores good entries (emails matched case-insensitively) and reports the others", async () => {
    const res = await as("manager").setUserCreditLimits({
      users: [
        { email: "ada@example.com", limit: 10 },
        { email: "grace@example.com", limit: -1 },
        { email: "linus@example.com", limit: 5 },
      ],
    });
    expect(res.updated.map((u) => [u.email, u.limit])).toEqual([["ada@example.com", 10]]);
    expect(res.errors.map((e) => [e.email, e.error])).toEqual([
      ["grace@example.com", ENTRY_ERRORS.badLimit],
      ["linus@example.com", ENTRY_ERRORS.unknownEmail],
    ]);
    expect(await findCreditLimit(database.db, orgId, ada)).toBe(10);
    expect(await findCreditLimit(database.db, orgId, grace)).toBeUndefined();
  });

  it("refuses members and guests, and whole requests with no or too many entries", async () => {
    for (const role of ["member", "guest"] as const) {
      const err = ConnectError.from(
        await as(role)
          .setUserCreditLimits({ users: [{ email: "grace@example.com", limit: 1 }] })
          .catch((e) => e),
      );
      expect(err.code).toBe(Code.PermissionDenied);
    }
    const empty = ConnectError.from(
      await as("owner")
        .setUserCreditLimits({ users: [] })
        .catch((e) => e),
    );
    expect([empty.code, empty.rawMessage]).toEqual([Code.InvalidArgument, "users: must have 1 to 100 entries, got 0"]);
    expect(await findCreditLimit(database.db, orgId, grace)).toBeUndefined();
  });

  describe("GetCreditBalance", () => {
    const NOW = new Date(Date.UTC(2026, 2, 15, 12));
    let linus: string;
    let balance: Client<typeof CreditLimitService>;
    const usage = (
      userId: string,
      time: string,
      modelId: string,
      tokens: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number },
    ) => ({
      type: "model_usage",
      time,
      orgId,
      userId,
      client: "terminal-ui",
      modelId,
      modelTier: "standard",
      inputTokens: tokens.input ?? 0,
      outputTokens: tokens.output ?? 0,
      cacheReadTokens: tokens.cacheRead ?? 0,
      cacheWriteTokens: tokens.cacheWrite ?? 0,
    });

    beforeAll(async () => {
      linus = (await createUser(database.db, { orgId, email: "linus@example.com", role: "member" })).id;
      balance = createClient(
        CreditLimitService,
        // As an unbound service account (the model gateway acts for any organization).
        handlerTransport((router) =>
          router.service(CreditLimitService, createCreditLimitService({ db: database.db, now: () => NOW })),
        ),
      );
      await database.db
        .insertInto("analytics_credit_multipliers")
        .values({ model_id: "opus", multiplier: 2 })
        .execute();
      const result = await ingestEvents(
        database.db,
        [
          usage(linus, "2026-02-27T10:00:00Z", "sonnet", { input: 1000 }), // last month
          usage(linus, "2026-03-10T10:00:00Z", "sonnet", { input: 100, output: 50, cacheRead: 1000, cacheWrite: 10 }), // 260
          usage(linus, "2026-03-14T23:59:59Z", "opus", { input: 10, output: 10 }), // 20 x 2 = 40
          usage(linus, "2026-03-15T09:00:00Z", "sonnet", { input: 5 }), // today: 5
          usage(grace, "2026-03-14T10:00:00Z", "sonnet", { input: 999 }), // someone else
        ],
        NOW.getTime(),
      );
      expect(result.rejected).toEqual([]);
    });

    it("uses calendar months in UTC", () => {
      expect(monthBounds(new Date("2026-03-31T23:59:59.999Z"))).toEqual({ start: "2026-03-01", next: "2026-04-01" });
      expect(monthBounds(new Date("2026-12-01T00:00:00Z"))).toEqual({ start: "2026-12-01", next: "2027-01-01" });
    });

    it("sums the month's credits from raw events before the rollup, and from the rollup after it, alike", async () => {
      expect(await creditsUsedThisMonth(database.db, orgId, linus, NOW)).toBeCloseTo(305, 9);
      await rollupOrganization(database.db, orgId, ["2026-03-10", "2026-03-14"], { through: "2026-03-14" });
      // The rolled-up days are read from analytics_user_daily: a multiplier changed since then
      // does not rewrite history.
      await database.db
        .updateTable("analytics_credit_multipliers")
        .set({ multiplier: 3 })
        .where("model_id", "=", "opus")
        .execute();
      expect(await creditsUsedThisMonth(database.db, orgId, linus, NOW)).toBeCloseTo(305, 9);
      // A late event on a rolled-up day makes that day pending: it is summed from raw events
      // (all of them, the late one included) until the next rollup, never twice.
      await ingestEvents(database.db, [usage(linus, "2026-03-10T18:00:00Z", "sonnet", { input: 1000 })], NOW.getTime());
      expect(await creditsUsedThisMonth(database.db, orgId, linus, NOW)).toBeCloseTo(1305, 9);
      await rollupOrganization(database.db, orgId, ["2026-03-10"], { through: "2026-03-14" });
      expect(await creditsUsedThisMonth(database.db, orgId, linus, NOW)).toBeCloseTo(1305, 9);
    });

    it("answers limit, month-to-date use and what remains (never below 0)", async () => {
      const unlimited = await balance.getCreditBalance({ orgId, userId: linus });
      expect(unlimited.limit).toBeUndefined();
      expect(unlimited.remaining).toBeUndefined();
      expect(unlimited.usedMonthToDate).toBeCloseTo(1305, 9);
      expect(unlimited.periodStart).toBe("2026-03-01");

      await as("owner").setUserCreditLimits({ users: [{ email: "linus@example.com", limit: 5000 }] });
      const limited = await balance.getCreditBalance({ orgId, userId: linus });
      expect([limited.limit, limited.remaining]).toEqual([5000, 5000 - limited.usedMonthToDate]);
      await as("owner").setUserCreditLimits({ users: [{ email: "linus@example.com", limit: 1000 }] });
      expect((await balance.getCreditBalance({ orgId, userId: linus })).remaining).toBe(0);
    });

    it("refuses unknown users and users of other organizations, and empty IDs", async () => {
      const other = (await createOrganization(database.db, { name: "Other" })).id;
      for (const req of [
        { orgId, userId: "nobody" },
        { orgId: other, userId: linus },
      ]) {
        expect(ConnectError.from(await balance.getCreditBalance(req).catch((e) => e)).code).toBe(Code.NotFound);
      }
      const err = ConnectError.from(await balance.getCreditBalance({ orgId, userId: "" }).catch((e) => e));
      expect([err.code, err.rawMessage]).toEqual([Code.InvalidArgument, "userId: is required"]);
    });
  });
});
