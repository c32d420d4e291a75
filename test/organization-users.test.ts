// GET /api/v0/organization/users end to end: keyset paging with opaque cursors, limits,
// organization scoping, roles, rate limits; and the same RPC from a @grpc/grpc-js client.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ListUsersResponseSchema,
  OrganizationService,
} from "../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { setOrganizationRateLimit } from "../services/organization/queries.js";
import { api, createTestOrg, createTestUser, type TestUser } from "./support/fixtures.js";
import { grpcClient } from "./support/grpc.js";
import { startTestServer, type TestServer } from "./support/server.js";
import { toJson } from "@bufbuild/protobuf";

describe("GET /api/v0/organization/users", () => {
  let server: TestServer;
  let owner: TestUser;
  let guest: TestUser;
  let member: TestUser;
  let other: TestUser;
  const orgUsers: TestUser[] = [];

  beforeAll(async () => {
    server = await startTestServer();
    const db = server.platform.db;
    const orgId = await createTestOrg(db, "Acme");
    owner = await createTestUser(db, orgId, "owner");
    orgUsers.push(owner);
    for (const role of ["manager", "member", "member", "guest", "member"] as const)
      orgUsers.push(await createTestUser(db, orgId, role));
    member = orgUsers[2]!;
    guest = orgUsers[4]!;
    const otherOrg = await createTestOrg(db, "Globex");
    other = await createTestUser(db, otherOrg, "owner");
    await createTestUser(db, otherOrg, "member");
  });
  afterAll(() => server?.close());

  it("returns users and pagination with every §2.11 field", async () => {
    const res = await api(server.restUrl, owner.key, "/api/v0/organization/users");
    expect(res.status).toBe(200);
    expect(res.json.pagination).toEqual({ hasMore: false, nextCursor: "" });
    expect(res.json.users).toHaveLength(orgUsers.length);
    const first = res.json.users[0];
    expect(first).toMatchObject({ id: owner.userId, email: owner.email, firstName: "owner", metadata: {} });
    expect(typeof first.lastName).toBe("string");
    expect(new Date(first.createdAt).toISOString()).toBe(first.createdAt);
    // Never signed in: the optional lastSignInAt is absent rather than empty.
    expect(first).not.toHaveProperty("lastSignInAt");
  });

  it("pages with limit=1 through every user exactly once", async () => {
    const seen: string[] = [];
    let cursor = "";
    for (let page = 0; page < 20; page++) {
      const res = await api(
        server.restUrl,
        owner.key,
        `/api/v0/organization/users?limit=1${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(res.status).toBe(200);
      expect(res.json.users).toHaveLength(1);
      seen.push(res.json.users[0].id);
      if (!res.json.pagination.hasMore) {
        expect(res.json.pagination.nextCursor).toBe("");
        break;
      }
      cursor = res.json.pagination.nextCursor;
      expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    }
    expect(seen).toEqual(orgUsers.map((u) => u.userId));
  });

  it("rejects a tampered cursor and another organization's cursor with 400", async () => {
    const first = await api(server.restUrl, owner.key, "/api/v0/organization/users?limit=2");
    const cursor: string = first.json.pagination.nextCursor;
    const tampered = (cursor[0] === "A" ? "B" : "A") + cursor.slice(1);
    const bad = await api(server.restUrl, owner.key, `/api/v0/organization/users?limit=2&cursor=${tampered}`);
    expect(bad.status).toBe(400);
    expect(bad.json.detail).toMatch(/^cursor:/);
    const foreign = await api(server.restUrl, other.key, `/api/v0/organization/users?limit=2&cursor=${cursor}`);
    expect(foreign.status).toBe(400);
    expect(foreign.json.detail).toMatch(/^cursor:/);
    // The same cursor still works for its own credential.
    const ok = await api(server.restUrl, owner.key, `/api/v0/organization/users?limit=2&cursor=${cursor}`);
    expect(ok.status).toBe(200);
    expect(ok.json.users[0].id).toBe(orgUsers[2]!.userId);
  });

  it.each(["0", "101", "abc", "-1", "1.5"])("limit=%s is a 400 naming limit", async (limit) => {
    const res = await api(server.restUrl, owner.key, `/api/v0/organization/users?limit=${limit}`);
    expect(res.status).toBe(400);
    expect(res.json.detail).toMatch(/limit/);
    expect(res.json.status).toBe(400);
  });

  it("an unknown query parameter is a 400", async () => {
    const res = await api(server.restUrl, owner.key, "/api/v0/organization/users?color=blue");
    expect(res.status).toBe(400);
    expect(res.json.detail).toMatch(/color/);
  });

  it("guests and members can read users; each organization sees only its own", async () => {
    for (const who of [guest, member]) {
      const res = await api(server.restUrl, who.key, "/api/v0/organization/users");
      expect(res.status).toBe(200);
      expect(res.json.users.map((u: { id: string }) => u.id)).toEqual(orgUsers.map((u) => u.userId));
    }
    const theirs = await api(server.restUrl, other.key, "/api/v0/organization/users");
    expect(theirs.json.users).toHaveLength(2);
    const ours = new Set(orgUsers.map((u) => u.userId));
    expect(theirs.json.users.some((u: { id: string }) => ours.has(u.id))).toBe(false);
  });

  it("answers 429 with Retry-After past the organization's rate limit", async () => {
    const db = server.platform.db;
    const orgId = await createTestOrg(db, "Tiny plan");
    await setOrganizationRateLimit(db, orgId, 3);
    const user = await createTestUser(db, orgId, "owner");
    const statuses: number[] = [];
    let last: Awaited<ReturnType<typeof api>> | undefined;
    let sent = 0;
    for (let i = 0; i < 5; i++) {
      sent = Date.now();
      last = await api(server.restUrl, user.key, "/api/v0/organization/users");
      statuses.push(last.status);
      expect(last.headers.get("ratelimit-limit")).toBe("3");
    }
    const answered = Date.now();
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    // The seconds left in the current window (the clock's minute) when the refusal was made, at
    // least 1; not a minute counted from the first request.
    const leftAt = (t: number) => Math.max(1, Math.ceil((60_000 - (t % 60_000)) / 1000));
    const retryAfter = Number(last!.headers.get("retry-after"));
    expect(retryAfter).toBeLessThanOrEqual(leftAt(sent));
    expect(retryAfter).toBeGreaterThanOrEqual(leftAt(answered));
    expect(last!.headers.get("ratelimit-reset")).toBe(String(retryAfter));
    expect(last!.headers.get("ratelimit-remaining")).toBe("0");
    expect(last!.json).toMatchObject({ status: 429, title: "Too Many Requests" });
  });

  it("a @grpc/grpc-js client lists users over the gRPC port", async () => {
    const client = grpcClient(OrganizationService, server.grpcUrl);
    try {
      const res = await client.call(
        OrganizationService.method.listUsers,
        { limit: "2" },
        { authorization: `Bearer ${owner.key}` },
      );
      expect(res.users.map((u) => u.id)).toEqual(orgUsers.slice(0, 2).map((u) => u.userId));
      expect(res.pagination?.hasMore).toBe(true);
      expect(toJson(ListUsersResponseSchema, res)).toMatchObject({ pagination: { hasMore: true } });
      await expect(client.call(OrganizationService.method.listUsers, {}, {})).rejects.toMatchObject({ code: 16 });
    } finally {
      client.close();
    }
  });
});
