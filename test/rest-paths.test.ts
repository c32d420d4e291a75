// Every REST path of docs/interface.md §4 reaches its RPC through the edge: with a valid key the call passes
// authentication and rate limiting (whose headers only the RPC layer sets) and answers with the
// RPC's own status; without a key each is a 401 with the error body.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, createTestOrg, createTestUser, type TestUser } from "./support/fixtures.js";
import { startTestServer, type TestServer } from "./support/server.js";

const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
const dates = `startDate=${yesterday}&endDate=${yesterday}`;
const someId = "00000000-0000-4000-8000-000000000000";

/** docs/interface.md §4, written out by hand (not derived from our descriptors, which is what is under test). */
const PATHS: Array<{ method: string; path: string; body?: unknown }> = [
  { method: "GET", path: `/api/v1/analytics/tokens?${dates}` },
  { method: "GET", path: `/api/v1/analytics/tools?${dates}` },
  { method: "GET", path: `/api/v1/analytics/activity?${dates}` },
  { method: "GET", path: `/api/v1/analytics/productivity?${dates}` },
  { method: "GET", path: `/api/v1/analytics/users?${dates}` },
  // Beyond the spec (docs/analytics.md).
  { method: "GET", path: `/api/v1/analytics/code?${dates}` },
  { method: "GET", path: `/api/v1/analytics/costs?${dates}` },
  { method: "GET", path: "/api/organization/maturity-level-reports" },
  { method: "GET", path: "/api/v0/sessions" },
  { method: "GET", path: `/api/v0/sessions/${someId}` },
  { method: "PATCH", path: `/api/v0/sessions/${someId}`, body: { sessionSettings: { model: "m" } } },
  { method: "GET", path: `/api/v0/sessions/${someId}/messages` },
  { method: "GET", path: `/api/v0/sessions/${someId}/messages/${someId}` },
  { method: "POST", path: `/api/v0/sessions/${someId}/messages`, body: { text: "hello" } },
  { method: "POST", path: "/api/v0/computers", body: { name: "rest-paths-box", remoteUser: "dev", provider: "byom" } },
  { method: "PATCH", path: `/api/v0/computers/${someId}`, body: { remoteUser: "dev" } },
  { method: "GET", path: "/api/v0/computers/name/rest-paths-box" },
  { method: "GET", path: "/api/v0/organization/users" },
  {
    method: "PUT",
    path: "/api/v0/organization/usage/limits/users",
    body: { users: [{ email: "nobody@example.test", limit: 10 }] },
  },
];

function expectErrorBody(res: { status: number; headers: Headers; json: any }) {
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  expect(res.json).toEqual({
    title: expect.any(String),
    detail: expect.any(String),
    status: res.status,
    requestId: expect.any(String),
  });
  expect(res.json.requestId).toBe(res.headers.get("x-request-id"));
}

describe("REST paths of docs/interface.md §4", () => {
  let server: TestServer;
  let owner: TestUser;

  beforeAll(async () => {
    server = await startTestServer();
    const orgId = await createTestOrg(server.platform.db);
    owner = await createTestUser(server.platform.db, orgId, "owner");
  });
  afterAll(() => server?.close());

  for (const { method, path, body } of PATHS) {
    it(`${method} ${path.split("?")[0]} reaches its RPC with a key`, async () => {
      const res = await api(server.restUrl, owner.key, path, { method, body });
      // Only the RPC layer (after auth) sets the rate-limit headers: the edge routed the call.
      expect(res.headers.get("ratelimit-limit")).toMatch(/^\d+$/);
      expect(res.headers.get("x-request-id")).toBeTruthy();
      expect([200, 201, 400, 404, 409, 501]).toContain(res.status);
      if (res.status >= 400) expectErrorBody(res);
    });

    it(`${method} ${path.split("?")[0]} without a key is 401 with the error body`, async () => {
      const res = await api(server.restUrl, undefined, path, {
        method,
        body,
        headers: { "x-request-id": `req-${method}-${path.length}` },
      });
      expect(res.status).toBe(401);
      expectErrorBody(res);
      expect(res.json.requestId).toBe(`req-${method}-${path.length}`);
    });
  }

  it("an unknown key is a 401", async () => {
    const res = await api(server.restUrl, "apk_not-a-real-key", "/api/v0/organization/users");
    expect(res.status).toBe(401);
    expectErrorBody(res);
  });

  it("a path outside the spec is a 404 with the error body", async () => {
    const res = await api(server.restUrl, owner.key, "/api/v0/nothing-here");
    expect(res.status).toBe(404);
    expectErrorBody(res);
  });
});
