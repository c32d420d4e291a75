// Secrets at rest and in logs (issues 10 and 17): API keys are stored only as hashes (no column
// of any table holds a key or a long piece of one), and the server's own log output — the real
// binary at LOG_LEVEL=trace, stdout and stderr captured — never contains a key, a JWT or an
// Authorization header value, whatever the requests did with them: sent them as credentials, or
// put them in a query value, a path variable or a body field of any endpoint.
import { spawn, type ChildProcess } from "node:child_process";
import fc from "fast-check";
import { SignJWT } from "jose";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../services/database.js";
import { migrations } from "../../services/migrations.js";
import { createApiKey, revokeApiKey } from "../../services/organization/queries.js";
import { createServiceAccount } from "../../services/organization/service-accounts.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { api, createTestOrg, createTestUser, type TestUser } from "../support/fixtures.js";
import { endpoints, Fresh, id, NO_FRESH_RESOURCES, WEBHOOK_URL, type Endpoint } from "./support/endpoints.js";
import { recordFigures } from "./support/figures.js";
import { seedOrg } from "./support/world.js";

const JWT_SECRET = "secrets-test-jwt-secret-0123456789abcdef";

function jwt(orgId: string, userId: string, opts: { secret?: string; exp?: number } = {}) {
  return new SignJWT({ org_id: orgId })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(userId)
    .setExpirationTime(opts.exp ?? Math.floor(Date.now() / 1000) + 600)
    .sign(new TextEncoder().encode(opts.secret ?? JWT_SECRET));
}

/** Every text-like value of every column of every table, as one string per row and column. */
async function everyStoredValue(db: TestDatabase<Database>["db"]): Promise<string[]> {
  const columns = await sql<{ table_name: string; column_name: string }>`
    select table_name, column_name from information_schema.columns
    where table_schema = current_schema() and data_type in ('text', 'character varying', 'jsonb', 'json', 'uuid', 'bytea', 'ARRAY')`.execute(
    db,
  );
  const values: string[] = [];
  for (const { table_name, column_name } of columns.rows) {
    const rows = await sql<{
      v: string | null;
    }>`select ${sql.ref(column_name)}::text as v from ${sql.table(table_name)}`.execute(db);
    for (const r of rows.rows) if (r.v) values.push(r.v);
  }
  return values;
}

describe("secrets", () => {
  let database: TestDatabase<Database>;
  let owner: TestUser;
  let member: TestUser;
  let child: ChildProcess;
  let restUrl: string;
  let internalGrpcUrl: string;
  let output = "";
  const used: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    const orgId = await createTestOrg(database.db, "Secrets");
    owner = await createTestUser(database.db, orgId, "owner");
    member = await createTestUser(database.db, orgId, "member");
    child = spawn(process.execPath, ["bin/agentplane.js", "serve"], {
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        PORT: "0",
        GRPC_PORT: "0",
        INTERNAL_GRPC_PORT: "0",
        LOG_LEVEL: "trace",
        SEED_DEMO: "false",
        JWT_SECRET,
        REDIS_URL: process.env.TEST_REDIS_URL ?? "",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
    [restUrl, internalGrpcUrl] = await new Promise<[string, string]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start: ${output.slice(-2000)}`)), 60_000);
      const poll = setInterval(() => {
        const match = /REST edge: (http:\/\/\S+)\s+gRPC: http:\/\/\S+\s+internal gRPC: (http:\/\/\S+)/.exec(output);
        if (match?.[1] && match[2]) {
          clearInterval(poll);
          clearTimeout(timer);
          resolve([match[1], match[2]]);
        }
      }, 50);
      child.once("exit", (code) => reject(new Error(`server exited ${code}: ${output.slice(-2000)}`)));
    });
  }, 90_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
    await database?.drop();
  });

  it("the server logs no key, JWT or Authorization value it was sent", async () => {
    const revoked = await createApiKey(database.db, owner.orgId, owner.userId);
    await revokeApiKey(database.db, owner.orgId, revoked.id);
    const valid = await jwt(owner.orgId, member.userId);
    const expired = await jwt(owner.orgId, member.userId, { exp: Math.floor(Date.now() / 1000) - 30 });
    const forged = await jwt(owner.orgId, owner.userId, { secret: "not-the-server-secret-0123456789abcdef" });
    const unknownKey = `apk_${"Q".repeat(43)}`;
    used.push(owner.key, member.key, revoked.key, valid, expired, forged, unknownKey);

    const requests: Array<
      [string | undefined, string, { method?: string; body?: unknown; headers?: Record<string, string> }?]
    > = [];
    for (const token of used) {
      requests.push(
        [token, "/api/v0/organization/users"],
        [token, "/api/v0/sessions?limit=5"],
        [token, "/api/v1/analytics/tokens?startDate=2026-02-01&endDate=2026-02-02"],
        [token, "/api/organization/maturity-level-reports?limit=0"],
        [
          token,
          "/api/v0/organization/usage/limits/users",
          { method: "PUT", body: { users: [{ email: member.email, limit: 5 }] } },
        ],
        [token, "/api/v0/computers", { method: "POST", body: { name: `c-${Math.random()}`, remoteUser: "dev" } }],
        [token, "/api/v0/sessions/nope/messages", { method: "POST", body: "{broken" }],
        [token, "/api/v0/no-such-route"],
      );
    }
    // Credentials in the wrong places: a malformed header, another scheme, a query parameter,
    // a request id and a body field. None may be echoed into the logs.
    requests.push(
      [undefined, "/api/v0/organization/users", { headers: { authorization: `Basic ${owner.key}` } }],
      [undefined, "/api/v0/organization/users", { headers: { authorization: `Bearer ${owner.key} extra` } }],
      [undefined, "/api/v0/organization/users", { headers: { authorization: owner.key } }],
      [owner.key, `/api/v0/organization/users?cursor=${encodeURIComponent(member.key)}`],
      [owner.key, `/api/v0/organization/users?apiKey=${encodeURIComponent(member.key)}`],
      [
        owner.key,
        "/api/v0/computers",
        { method: "POST", body: { name: member.key.slice(0, 60), remoteUser: "dev", token: valid } },
      ],
    );
    const statuses = new Map<number, number>();
    for (const [token, path, init] of requests) {
      const res = await api(restUrl, token, path, init);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    }
    // The requests ran and were logged (one line per RPC at least), so the grep is meaningful.
    expect([...statuses.keys()].sort()).toEqual(expect.arrayContaining([200, 201, 400, 401, 404]));
    await new Promise((r) => setTimeout(r, 300));
    expect(output.split("\n").filter((l) => l.includes('"rpc"')).length).toBeGreaterThan(requests.length / 2);

    expectNoCredentialIn(output, used);
    recordFigures("secrets in logs", {
      requests: requests.length,
      credentials: used.length,
      logLines: output.split("\n").length,
      logBytes: output.length,
      found: 0,
    });
  }, 60_000);

  it("logs no credential a client put in a query value, path variable or body field, on any endpoint", async () => {
    const org = await seedOrg(database.db, restUrl, internalGrpcUrl, "Secrets", { demo: false });
    const planted = [
      org.members.member.key,
      `apk_${"R".repeat(20)}unknownKey${"r".repeat(13)}`,
      // A workload token (aps_, the shape of an API key), which the server does not know.
      `aps_${"W".repeat(20)}workload${"w".repeat(15)}`,
      await jwt(org.orgId, org.members.member.userId),
    ];
    const asBearer = `Bearer ${org.members.manager.key}`;
    // Each endpoint is called with a planted value in one parameter, never with a made one.
    // Only a webhook's URL is a made value that another parameter's request needs (the other
    // made values are their endpoint's only parameter, which holds the planted value).
    const catalog = endpoints(org, {
      ...NO_FRESH_RESOURCES,
      webhookUrl: async () => WEBHOOK_URL,
      fuzzComputer: org.computer,
      busyComputer: org.computer,
      webhook: { id: org.computer.id },
    });
    const before = output.length;
    const statuses = new Map<number, number>();
    let requests = 0;
    for (const endpoint of catalog) {
      for (const param of endpoint.params) {
        for (const credential of [...planted, asBearer]) {
          for (const value of plantedValues(param.valid, credential)) {
            const res = await send(restUrl, endpoint, org.members.owner.key, param.name, value);
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            requests++;
          }
        }
      }
    }
    // Most requests were refused with a reason naming the value (the case that leaked).
    expect(statuses.get(400) ?? 0).toBeGreaterThan(requests / 4);
    await new Promise((r) => setTimeout(r, 500));
    const logged = output.slice(before);
    expect(logged.split("\n").filter((l) => l.includes('"reason"')).length).toBeGreaterThan(requests / 4);
    expectNoCredentialIn(logged, [...planted, org.members.manager.key, org.members.owner.key]);
    recordFigures("secrets in parameters", {
      endpoints: catalog.length,
      params: catalog.reduce((n, e) => n + e.params.length, 0),
      requests,
      statuses: Object.fromEntries([...statuses].sort(([a], [b]) => a - b)),
      logLines: logged.split("\n").length,
      found: 0,
    });
  }, 120_000);

  it("stores API keys and service-account tokens only as hashes: no column of any table holds one or 16 characters of one", async () => {
    const workload = await createServiceAccount(database.db, {
      name: "secrets",
      scopes: ["sessions.runner"],
      orgId: owner.orgId,
    });
    const keys = [owner.key, member.key, workload.token, ...used.filter((k) => k.startsWith("apk_"))];
    const values = await everyStoredValue(database.db);
    expect(values.length).toBeGreaterThan(0);
    for (const key of keys) {
      const secret = key.slice(4);
      const pieces = Array.from({ length: secret.length - 15 }, (_, i) => secret.slice(i, i + 16));
      const found = values.filter((v) => v.includes(key) || pieces.some((p) => v.includes(p)));
      expect(found, "a stored value holding a key").toEqual([]);
    }
    const hashes = [
      ...(await database.db.selectFrom("api_keys").select(["key_hash", "prefix"]).execute()),
      ...(await database.db.selectFrom("service_accounts").select(["token_hash as key_hash", "prefix"]).execute()),
    ];
    for (const h of hashes) {
      expect(h.key_hash).toMatch(/^[0-9a-f]{64}$/);
      // The displayed prefix: "apk_" and 6 characters (36 of the key's 256 random bits).
      expect(h.prefix.length).toBeLessThanOrEqual(10);
    }
    recordFigures("secrets at rest", { keys: keys.length, storedValuesScanned: values.length, found: 0 });
  });
});

/** No credential, nor a 16-character piece of its secret part, nor `Bearer <credential>`, in `text`. */
function expectNoCredentialIn(text: string, credentials: readonly string[]): void {
  for (const secret of credentials) {
    expect(text.includes(secret), `a credential in the log: ${secret.slice(0, 8)}…`).toBe(false);
    // Nor a long piece of one (a truncated echo).
    const body = /^ap[ks]_/.test(secret) ? secret.slice(4) : secret.split(".")[2]!;
    expect(text.includes(body.slice(0, 16)), `part of a credential in the log: ${secret.slice(0, 8)}…`).toBe(false);
  }
  expect(text).not.toMatch(/Bearer\s+(?:ap[ks]_|ey)/);
}

/**
 * The credential as the parameter's whole value, and (for a structured value such as the users
 * of the credit-limit PUT) in each string of a valid value, where a nested field's check sees it.
 */
function plantedValues(valid: fc.Arbitrary<unknown>, credential: string): unknown[] {
  const sample = fc.sample(valid, { numRuns: 1, seed: 17 })[0];
  const values: unknown[] = [credential];
  const replaced = replaceStrings(sample, credential);
  if (JSON.stringify(replaced) !== JSON.stringify(sample) && typeof sample !== "string") values.push(replaced);
  return values;
}

function replaceStrings(value: unknown, by: string): unknown {
  if (typeof value === "string") return by;
  if (Array.isArray(value)) return value.map((v) => replaceStrings(v, by));
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceStrings(v, by)]));
  return value;
}

/** The endpoint called with a valid value for every parameter but `name`, which gets `value`. */
async function send(restUrl: string, endpoint: Endpoint, key: string, name: string, value: unknown) {
  const validOrValue = (p: Endpoint["params"][number]) =>
    p.name === name ? value : fc.sample(p.valid, { numRuns: 1, seed: 17 })[0];
  let path = endpoint.template;
  const query = new URLSearchParams();
  const body: Record<string, unknown> = {};
  for (const p of endpoint.params) {
    let v = validOrValue(p);
    if (v instanceof Fresh) v = await v.make();
    if (p.in === "path") path = path.replace(`{${p.name}}`, encodeURIComponent(String(v)));
    else if (p.in === "query") {
      if (v !== "") query.set(p.name, String(v));
    } else body[p.name] = v;
  }
  const target = query.size > 0 ? `${path}?${query}` : path;
  const hasBody = endpoint.params.some((p) => p.in === "body");
  const res = await api(restUrl, key, target, { method: endpoint.method, body: hasBody ? body : undefined });
  if (res.status >= 500) throw new Error(`${id(endpoint)} with ${name}: ${res.status} ${res.text}`);
  return res;
}
