// PUT /api/v0/organization/usage/limits/users end to end: per-entry results inside a 200, only
// the good entries stored, 1 to 100 entries, owners and managers only; the same RPC over
// @grpc/grpc-js; and the internal GetCreditBalance the model gateway calls over gRPC.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreditLimitService, OrganizationService } from "../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { ingestEvents } from "../services/analytics/ingest/ingest.js";
import { ENTRY_ERRORS } from "../services/organization/credit-limits/entries.js";
import {
  api,
  createTestOrg,
  createTestUser,
  type TestUser,
  bearer,
  createTestServiceAccount,
} from "./support/fixtures.js";
import { grpcClient } from "./support/grpc.js";
import { startTestServer, type TestServer } from "./support/server.js";

const PATH = "/api/v0/organization/usage/limits/users";

describe("PUT /api/v0/organization/usage/limits/users", () => {
  let server: TestServer;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let guest: TestUser;
  let stranger: TestUser;

  const put = (user: TestUser, body: unknown) => api(server.restUrl, user.key, PATH, { method: "PUT", body });
  const stored = async () =>
    Object.fromEntries(
      (
        await server.platform.db
          .selectFrom("user_credit_limits")
          .select(["user_id", "monthly_limit", "updated_by"])
          .where("org_id", "=", owner.orgId)
          .execute()
      ).map((r) => [r.user_id, [r.monthly_limit, r.updated_by]]),
    );

  beforeAll(async () => {
    server = await startTestServer();
    const db = server.platform.db;
    const orgId = await createTestOrg(db, "Limits");
    owner = await createTestUser(db, orgId, "owner");
    manager = await createTestUser(db, orgId, "manager");
    member = await createTestUser(db, orgId, "member");
    guest = await createTestUser(db, orgId, "guest");
    stranger = await createTestUser(db, await createTestOrg(db, "Other"), "member", "stranger@other.test");
  });
  afterAll(() => server?.close());

  it("sorts a mix of entries into updated and errors, in request order, and stores only the good ones", async () => {
    const res = await put(manager, {
      users: [
        { email: member.email, limit: 1500 },
        { email: "nobody@limits.test", limit: 10 },
        { email: guest.email, limit: -5 },
        { email: owner.email, limit: "Infinity" },
        { email: manager.email, limit: 100 },
        { email: manager.email.toUpperCase(), limit: 200 },
        { email: guest.email.toUpperCase(), limit: 0 },
        { email: stranger.email, limit: 50 },
        { email: owner.email, limit: "NaN" },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      updated: [{ email: member.email, limit: 1500 }],
      errors: [
        { email: "nobody@limits.test", error: ENTRY_ERRORS.unknownEmail },
        { email: guest.email, error: ENTRY_ERRORS.repeated },
        { email: owner.email, error: ENTRY_ERRORS.repeated },
        { email: manager.email, error: ENTRY_ERRORS.repeated },
        { email: manager.email.toUpperCase(), error: ENTRY_ERRORS.repeated },
        { email: guest.email.toUpperCase(), error: ENTRY_ERRORS.repeated },
        // Another organization's user is as unknown here as a made-up address.
        { email: stranger.email, error: ENTRY_ERRORS.unknownEmail },
        { email: owner.email, error: ENTRY_ERRORS.repeated },
      ],
    });
  });

  it("stores exactly the updated entries, and a later PUT replaces a limit", async () => {
    // Repeated emails (in any letter case) stored nothing: only member's limit landed.
    expect(await stored()).toEqual({ [member.userId]: [1500, manager.userId] });

    const res = await put(owner, {
      users: [
        { email: member.email, limit: 2500.5 },
        { email: guest.email.toUpperCase(), limit: 0 },
        { email: owner.email, limit: -1 },
        { email: manager.email, limit: "1e3" },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.json.updated).toEqual([
      { email: member.email, limit: 2500.5 },
      { email: guest.email.toUpperCase(), limit: 0 },
      { email: manager.email, limit: 1000 },
    ]);
    expect(res.json.errors).toEqual([{ email: owner.email, error: ENTRY_ERRORS.badLimit }]);
    expect(await stored()).toEqual({
      [member.userId]: [2500.5, owner.userId],
      [guest.userId]: [0, owner.userId],
      [manager.userId]: [1000, owner.userId],
    });
  });

  it("answers 200 with empty lists when every entry fails, without storing anything", async () => {
    const before = await stored();
    const res = await put(owner, { users: [{ email: "ghost@limits.test", limit: 1 }] });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      updated: [],
      errors: [{ email: "ghost@limits.test", error: ENTRY_ERRORS.unknownEmail }],
    });
    expect(await stored()).toEqual(before);
  });

  it("is a 403 for members and guests, and stores nothing", async () => {
    const before = await stored();
    for (const user of [member, guest]) {
      const res = await put(user, { users: [{ email: member.email, limit: 999999 }] });
      expect(res.status).toBe(403);
      expect(res.json.detail).toMatch(/setting credit limits requires the owner or manager role/);
    }
    expect(await stored()).toEqual(before);
  });

  it("is a 400 naming users without 1 to 100 entries", async () => {
    for (const body of [
      { users: [] },
      {},
      { users: Array.from({ length: 101 }, (_, i) => ({ email: `u${i}@limits.test`, limit: 1 })) },
    ]) {
      const res = await put(owner, body);
      expect(res.status).toBe(400);
      expect(res.json.detail).toMatch(/^users: must have 1 to 100 entries, got (0|101)$/);
    }
    const hundred = await put(owner, {
      users: Array.from({ length: 100 }, (_, i) => ({ email: `u${i}@limits.test`, limit: 1 })),
    });
    expect(hundred.status).toBe(200);
    expect(hundred.json.errors).toHaveLength(100);
  });

  it("serves the same RPC to a @grpc/grpc-js client", async () => {
    const client = grpcClient(OrganizationService, server.grpcUrl);
    try {
      const res = await client.call(
        OrganizationService.method.setUserCreditLimits,
        { users: [{ email: member.email, limit: 42 }] },
        { authorization: `Bearer ${owner.key}` },
      );
      expect(res.updated.map((u) => [u.email, u.limit])).toEqual([[member.email, 42]]);
      expect(res.errors).toEqual([]);
      await expect(
        client.call(
          OrganizationService.method.setUserCreditLimits,
          { users: [{ email: member.email, limit: 1 }] },
          { authorization: `Bearer ${member.key}` },
        ),
      ).rejects.toMatchObject({ code: 7 });
    } finally {
      client.close();
    }
  });

  it("answers GetCreditBalance over gRPC with the limit, this month's credits and what remains", async () => {
    const now = new Date();
    await put(owner, { users: [{ email: manager.email, limit: 750 }] });
    const result = await ingestEvents(server.platform.db, [
      {
        type: "model_usage",
        time: now.toISOString(),
        orgId: owner.orgId,
        userId: manager.userId,
        client: "web",
        modelId: "sonnet",
        modelTier: "standard",
        inputTokens: 400,
        outputTokens: 100,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
      },
    ]);
    expect(result.accepted).toBe(1);
    const client = grpcClient(
      CreditLimitService,
      server.internalGrpcUrl,
      bearer(await createTestServiceAccount(server.platform.db)),
    );
    try {
      const balance = await client.call(CreditLimitService.method.getCreditBalance, {
        orgId: owner.orgId,
        userId: manager.userId,
      });
      expect(balance.limit).toBe(750);
      expect(balance.usedMonthToDate).toBe(500);
      expect(balance.remaining).toBe(250);
      expect(balance.periodStart).toBe(`${now.toISOString().slice(0, 7)}-01`);
      const none = await client.call(CreditLimitService.method.getCreditBalance, {
        orgId: owner.orgId,
        userId: owner.userId,
      });
      expect([none.limit, none.remaining, none.usedMonthToDate]).toEqual([undefined, undefined, 0]);
      await expect(
        client.call(CreditLimitService.method.getCreditBalance, { orgId: stranger.orgId, userId: manager.userId }),
      ).rejects.toMatchObject({ code: 5 });
    } finally {
      client.close();
    }
    // Internal: the REST edge does not route it.
    expect(
      (
        await api(server.restUrl, owner.key, "/agentplane.organization.v1alpha1.CreditLimitService/GetCreditBalance", {
          method: "POST",
          body: {},
        })
      ).status,
    ).toBe(404);
  });
});
