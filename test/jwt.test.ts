// Access tokens (JWT, HS256 with JWT_SECRET) on the v0 endpoints: the token names the user and
// organization, our records give the role; a bad signature, an expired token or a token for a
// user outside the organization is a 401; the first use records the user's sign-in.
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, createTestOrg, createTestUser, type TestUser } from "./support/fixtures.js";
import { startTestServer, type TestServer } from "./support/server.js";

const SECRET = "test-secret-with-at-least-thirty-two-characters";

function token(claims: { sub: string; org_id: string }, opts: { secret?: string; expiresIn?: string | number } = {}) {
  return new SignJWT({ org_id: claims.org_id })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(claims.sub)
    .setIssuedAt()
    .setExpirationTime(opts.expiresIn ?? "5m")
    .sign(new TextEncoder().encode(opts.secret ?? SECRET));
}

describe("JWT access tokens", () => {
  let server: TestServer;
  let member: TestUser;
  let outsider: TestUser;

  beforeAll(async () => {
    server = await startTestServer({ JWT_SECRET: SECRET });
    const db = server.platform.db;
    const orgId = await createTestOrg(db);
    member = await createTestUser(db, orgId, "member");
    outsider = await createTestUser(db, await createTestOrg(db), "owner");
  });
  afterAll(() => server?.close());

  it("is accepted on v0 endpoints and records the sign-in", async () => {
    const res = await api(
      server.restUrl,
      await token({ sub: member.userId, org_id: member.orgId }),
      "/api/v0/organization/users",
    );
    expect(res.status).toBe(200);
    const me = res.json.users.find((u: { id: string }) => u.id === member.userId);
    expect(Date.now() - new Date(me.lastSignInAt).getTime()).toBeLessThan(60_000);
  });

  it.each([
    [
      "a wrong signature",
      () => token({ sub: "x", org_id: "y" }, { secret: "another-secret-that-is-thirty-two-chars!" }),
    ],
    ["an expired token", () => token({ sub: "x", org_id: "y" }, { expiresIn: Math.floor(Date.now() / 1000) - 60 })],
  ])("rejects %s with 401", async (_name, make) => {
    const res = await api(server.restUrl, await make(), "/api/v0/organization/users");
    expect(res.status).toBe(401);
  });

  it("rejects a token without an expiry: it would be valid forever", async () => {
    const forever = await new SignJWT({ org_id: member.orgId })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(member.userId)
      .setIssuedAt()
      .sign(new TextEncoder().encode(SECRET));
    const res = await api(server.restUrl, forever, "/api/v0/organization/users");
    expect(res.status).toBe(401);
    // The same claims with an expiry are accepted: the refusal is about exp alone.
    expect(
      (
        await api(
          server.restUrl,
          await token({ sub: member.userId, org_id: member.orgId }),
          "/api/v0/organization/users",
        )
      ).status,
    ).toBe(200);
  });

  it("rejects a token naming a user of another organization", async () => {
    const res = await api(
      server.restUrl,
      await token({ sub: outsider.userId, org_id: member.orgId }),
      "/api/v0/organization/users",
    );
    expect(res.status).toBe(401);
  });

  it("is refused where only API keys are accepted (analytics, readiness)", async () => {
    const jwt = await token({ sub: member.userId, org_id: member.orgId });
    expect((await api(server.restUrl, jwt, "/api/organization/maturity-level-reports")).status).toBe(401);
  });
});

describe("JWT issuer and audience, when configured", () => {
  let server: TestServer;
  let member: TestUser;
  const ISSUER = "https://auth.example.test/";
  const AUDIENCE = "agentplane-api";

  beforeAll(async () => {
    server = await startTestServer({ JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE });
    member = await createTestUser(server.platform.db, await createTestOrg(server.platform.db), "member");
  });
  afterAll(() => server?.close());

  const signed = (iss: string | undefined, aud: string | string[] | undefined) => {
    let jwt = new SignJWT({ org_id: member.orgId })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(member.userId)
      .setIssuedAt()
      .setExpirationTime("5m");
    if (iss !== undefined) jwt = jwt.setIssuer(iss);
    if (aud !== undefined) jwt = jwt.setAudience(aud);
    return jwt.sign(new TextEncoder().encode(SECRET));
  };

  it.each([
    ["the right issuer and audience", ISSUER, AUDIENCE, 200],
    ["an audience list that names ours", ISSUER, ["other", AUDIENCE], 200],
    ["another issuer", "https://evil.example.test/", AUDIENCE, 401],
    ["no issuer", undefined, AUDIENCE, 401],
    ["another audience", ISSUER, "other-api", 401],
    ["no audience", ISSUER, undefined, 401],
  ] as const)("answers a token with %s: %i", async (_name, iss, aud, status) => {
    const res = await api(
      server.restUrl,
      await signed(iss, aud as string | string[] | undefined),
      "/api/v0/organization/users",
    );
    expect(res.status).toBe(status);
  });
});
