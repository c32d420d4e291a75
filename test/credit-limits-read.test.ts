// Credit limits read and removed (issue 20, item 4): GET /api/v0/organization/usage/limits/users
// (keyset pages with each user's month-to-date use), DELETE .../limits/users/{email} (204; emails
// with "+", "@" and "." in the path, raw and percent-encoded) and GET .../limits/me. Through the
// REST edge and over gRPC with a @grpc/grpc-js client; the use figures are GetCreditBalance's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreditLimitService, OrganizationService } from "../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { ingestEvents } from "../services/analytics/ingest/ingest.js";
import {
  api,
  bearer,
  createTestOrg,
  createTestServiceAccount,
  createTestUser,
  type TestUser,
} from "./support/fixtures.js";
import { expectErrorBody } from "./support/error-body.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { startTestServer, type TestServer } from "./support/server.js";

const LIMITS = "/api/v0/organization/usage/limits/users";
const ME = "/api/v0/organization/usage/limits/me";

describe("credit limits: read and remove", () => {
  let server: TestServer;
  let owner: TestUser;
  let manager: TestUser;
  let member: TestUser;
  let plus: TestUser;
  let upper: TestUser;
  let guest: TestUser;
  let stranger: TestUser;
  let balances: GrpcCaller;
  let publicGrpc: GrpcCaller;

  const rest = (user: TestUser | undefined, path: string, init: Parameters<typeof api>[3] = {}) =>
    api(server.restUrl, user?.key, path, init);
  const setLimits = async (user: TestUser, users: { email: string; limit: number }[]) => {
    const res = await rest(user, LIMITS, { method: "PUT", body: { users } });
    expect(res.status).toBe(200);
    expect(res.json.errors).toEqual([]);
  };
  const listAll = async (user: TestUser, pageSize: number) => {
    const items: any[] = [];
    let cursor = "";
    do {
      const res = await rest(user, `${LIMITS}?limit=${pageSize}${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      expect(res.json.users.length).toBeLessThanOrEqual(pageSize);
      items.push(...res.json.users);
      cursor = res.json.pagination.nextCursor;
      expect(res.json.pagination.hasMore).toBe(cursor !== "");
    } while (cursor);
    return items;
  };
  const balanceOf = (user: TestUser) =>
    balances.call(CreditLimitService.method.getCreditBalance, { orgId: user.orgId, userId: user.userId });
  const use = async (user: TestUser, inputTokens: number) => {
    const result = await ingestEvents(server.platform.db, [
      {
        type: "model_usage",
        time: new Date().toISOString(),
        orgId: user.orgId,
        userId: user.userId,
        client: "web",
        modelId: "sonnet",
        modelTier: "standard",
        inputTokens,
        outputTokens: 0,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
      },
    ]);
    expect(result.accepted).toBe(1);
  };

  beforeAll(async () => {
    server = await startTestServer();
    const db = server.platform.db;
    const orgId = await createTestOrg(db, "Limits read");
    owner = await createTestUser(db, orgId, "owner", "owner@limits-read.test");
    manager = await createTestUser(db, orgId, "manager", "manager@limits-read.test");
    member = await createTestUser(db, orgId, "member", "member@limits-read.test");
    plus = await createTestUser(db, orgId, "member", "ada+ops@limits-read.test");
    upper = await createTestUser(db, orgId, "member", "Zed.Upper@Limits-Read.test");
    guest = await createTestUser(db, orgId, "guest", "guest@limits-read.test");
    stranger = await createTestUser(db, await createTestOrg(db, "Other"), "owner", "ada+ops@other.test");
    balances = grpcClient(CreditLimitService, server.internalGrpcUrl, bearer(await createTestServiceAccount(db)));
    publicGrpc = grpcClient(OrganizationService, server.grpcUrl);
    await setLimits(owner, [
      { email: member.email, limit: 1000 },
      { email: plus.email, limit: 0 },
      { email: upper.email, limit: 50 },
      { email: manager.email, limit: 2500.5 },
    ]);
    await setLimits(stranger, [{ email: stranger.email, limit: 7 }]);
    await use(member, 400);
    await use(upper, 80);
  });
  afterAll(async () => {
    balances?.close();
    publicGrpc?.close();
    await server?.close();
  });

  describe("GET /api/v0/organization/usage/limits/users", () => {
    it("pages through the users with a limit by lowercased email, with GetCreditBalance's figures", async () => {
      const items = await listAll(manager, 2);
      expect(items.map((u) => u.email)).toEqual([plus.email, manager.email, member.email, upper.email]);
      for (const [user, item] of [plus, manager, member, upper].map((u, i) => [u, items[i]] as const)) {
        const balance = await balanceOf(user);
        expect(item).toEqual({
          email: user.email,
          limit: balance.limit,
          usedMonthToDate: balance.usedMonthToDate,
          remaining: balance.remaining,
        });
      }
      // Zeros are printed, not left out: a limit of 0 blocks all use.
      expect(items[0]).toEqual({ email: plus.email, limit: 0, usedMonthToDate: 0, remaining: 0 });
      expect(items[2]).toEqual({ email: member.email, limit: 1000, usedMonthToDate: 400, remaining: 600 });
      // Used past the limit: nothing remains, never less.
      expect(items[3]).toEqual({ email: upper.email, limit: 50, usedMonthToDate: 80, remaining: 0 });
      // Another organization sees its own only.
      expect(await listAll(stranger, 20)).toEqual([
        { email: stranger.email, limit: 7, usedMonthToDate: 0, remaining: 7 },
      ]);
    });

    it("owners and managers only; a bad limit or cursor is a 400 naming it", async () => {
      expect((await rest(owner, LIMITS)).status).toBe(200);
      for (const user of [member, guest]) expectErrorBody(await rest(user, LIMITS), 403, "credit limits");
      expect((await rest(undefined, LIMITS)).status).toBe(401);
      for (const limit of ["0", "101", "x"])
        expectErrorBody(await rest(owner, `${LIMITS}?limit=${limit}`), 400, "limit");
      const first = await rest(owner, `${LIMITS}?limit=1`);
      expectErrorBody(await rest(manager, `${LIMITS}?cursor=${first.json.pagination.nextCursor}`), 400, "cursor");
      expectErrorBody(await rest(owner, `${LIMITS}?cursor=nope`), 400, "cursor");
    });

    it("over gRPC: the same page", async () => {
      const viaRest = (await rest(owner, `${LIMITS}?limit=3`)).json;
      const viaGrpc = await publicGrpc.call(
        OrganizationService.method.listUserCreditLimits,
        { limit: "3" },
        bearer(owner.key),
      );
      expect(viaGrpc.users.map((u) => [u.email, u.limit, u.usedMonthToDate, u.remaining])).toEqual(
        viaRest.users.map((u: any) => [u.email, u.limit, u.usedMonthToDate, u.remaining]),
      );
      expect(viaGrpc.pagination?.hasMore).toBe(true);
      await expect(
        publicGrpc.call(OrganizationService.method.listUserCreditLimits, {}, bearer(member.key)),
      ).rejects.toMatchObject({ code: 7 });
    });
  });

  describe("DELETE /api/v0/organization/usage/limits/users/{email}", () => {
    const path = (email: string) => `${LIMITS}/${email}`;
    const limitOf = async (user: TestUser) => (await balanceOf(user)).limit;

    it("removes the limit of an email with '+' written as is: 204, unlimited; again: 204", async () => {
      const res = await rest(manager, path(plus.email), { method: "DELETE" });
      expect(res.status).toBe(204);
      expect(res.text).toBe("");
      expect(await limitOf(plus)).toBeUndefined();
      expect((await listAll(owner, 100)).map((u) => u.email)).not.toContain(plus.email);
      // No limit left: the outcome holds, the same answer.
      expect((await rest(manager, path(plus.email), { method: "DELETE" })).status).toBe(204);
      // The other organization's user with the same local part keeps theirs.
      expect(await limitOf(stranger)).toBe(7);
    });

    it("reads '+', '@' and '.' percent-encoded too, and matches the email case-insensitively", async () => {
      await setLimits(owner, [{ email: plus.email, limit: 5 }]);
      expect((await rest(owner, path(encodeURIComponent(plus.email)), { method: "DELETE" })).status).toBe(204);
      expect(await limitOf(plus)).toBeUndefined();
      const encoded = upper.email.toLowerCase().replace(/\./g, "%2E").replace("@", "%40");
      expect((await rest(owner, path(encoded), { method: "DELETE" })).status).toBe(204);
      expect(await limitOf(upper)).toBeUndefined();
    });

    it("an email of no user here is a 404, another organization's included; members and guests 403", async () => {
      expectErrorBody(await rest(owner, path("nobody@limits-read.test"), { method: "DELETE" }), 404, "user");
      expectErrorBody(await rest(owner, path(stranger.email), { method: "DELETE" }), 404, "user");
      expect(await limitOf(stranger)).toBe(7);
      for (const user of [member, guest])
        expectErrorBody(await rest(user, path(member.email), { method: "DELETE" }), 403, "credit limits");
      expect(await limitOf(member)).toBe(1000);
    });

    it("over gRPC: the same; an empty email is a 400 naming it", async () => {
      await setLimits(owner, [{ email: plus.email, limit: 9 }]);
      await publicGrpc.call(
        OrganizationService.method.deleteUserCreditLimit,
        { email: plus.email.toUpperCase() },
        bearer(owner.key),
      );
      expect(await limitOf(plus)).toBeUndefined();
      await expect(
        publicGrpc.call(OrganizationService.method.deleteUserCreditLimit, { email: "" }, bearer(owner.key)),
      ).rejects.toMatchObject({ code: 3, details: expect.stringMatching(/^email.* is required$/) });
      await expect(
        publicGrpc.call(OrganizationService.method.deleteUserCreditLimit, { email: stranger.email }, bearer(owner.key)),
      ).rejects.toMatchObject({ code: 5 });
      await expect(
        publicGrpc.call(OrganizationService.method.deleteUserCreditLimit, { email: member.email }, bearer(guest.key)),
      ).rejects.toMatchObject({ code: 7 });
    });
  });

  describe("GET /api/v0/organization/usage/limits/me", () => {
    it("any role reads their own limit, this month's use and what remains", async () => {
      const res = await rest(member, ME);
      expect(res.status).toBe(200);
      const balance = await balanceOf(member);
      expect(res.json).toEqual({ email: member.email, limit: 1000, usedMonthToDate: 400, remaining: 600 });
      expect([balance.limit, balance.usedMonthToDate, balance.remaining]).toEqual([1000, 400, 600]);
    });

    it("without a limit: no limit and no remaining, the use still counted", async () => {
      await use(guest, 30);
      const res = await rest(guest, ME);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ email: guest.email, usedMonthToDate: 30 });
      expect((await rest(owner, ME)).json).toEqual({ email: owner.email, usedMonthToDate: 0 });
      expect((await rest(undefined, ME)).status).toBe(401);
    });

    it("over gRPC: the same", async () => {
      const mine = await publicGrpc.call(OrganizationService.method.getMyCreditLimit, {}, bearer(member.key));
      expect([mine.email, mine.limit, mine.usedMonthToDate, mine.remaining]).toEqual([member.email, 1000, 400, 600]);
      const theirs = await publicGrpc.call(OrganizationService.method.getMyCreditLimit, {}, bearer(stranger.key));
      expect([theirs.email, theirs.limit, theirs.remaining]).toEqual([stranger.email, 7, 7]);
      await expect(publicGrpc.call(OrganizationService.method.getMyCreditLimit, {}, {})).rejects.toMatchObject({
        code: 16,
      });
    });
  });
});
