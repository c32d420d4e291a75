// A flood of made-up API keys from one client: past the failure limit, the client's unknown
// keys are refused with 429 and Retry-After without a query to Postgres (the server reaches
// Postgres through a proxy that counts the statements naming api_keys); a valid key in use keeps
// working throughout; another client is not affected; and one invalid key presented again and
// again costs one lookup.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OrganizationService } from "../../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { DEFAULT_AUTH_FAILURE_LIMITS } from "../../services/platform/auth-failures.js";
import { api, createTestOrg, createTestUser, type TestUser } from "../support/fixtures.js";
import { grpcClient } from "../support/grpc.js";
import { recordFigures } from "./support/figures.js";
import { startServerBehindProxy, type ServerBehindProxy } from "./support/server-behind-proxy.js";
import { UNLIMITED } from "./support/world.js";
import { setOrganizationRateLimit } from "../../services/organization/queries.js";

const REAL = Boolean(process.env.TEST_DATABASE_URL);
const FLOOD = 1_500;
const CONCURRENCY = 16;
const madeUpKey = () => `apk_${randomBytes(32).toString("base64url")}`;

describe.skipIf(!REAL)(
  `a flood of made-up keys${REAL ? "" : " (skipped: needs TEST_DATABASE_URL: the statements are counted by a proxy in front of Postgres)"}`,
  () => {
    let world: ServerBehindProxy;
    let server: ServerBehindProxy["server"];
    let owner: TestUser;
    let idle: TestUser;
    const lookups = () => world.proxy.statementsNaming('"api_keys"');

    beforeAll(async () => {
      world = await startServerBehindProxy();
      server = world.server;
      const db = world.database.db;
      const orgId = await createTestOrg(db);
      await setOrganizationRateLimit(db, orgId, UNLIMITED);
      owner = await createTestUser(db, orgId, "owner");
      idle = await createTestUser(db, orgId, "member");
    }, 60_000);
    afterAll(() => world?.close());

    it("refuses the flood past the limit without querying Postgres, and serves valid keys throughout", async () => {
      expect((await api(server.restUrl, owner.key, "/api/v0/organization/users")).status).toBe(200);
      const before = lookups();
      const statuses: Record<number, number> = {};
      const retryAfter = new Set<string>();
      const legit: number[] = [];
      let next = 0;
      let flooding = true;
      const flood = Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < FLOOD) {
            next++;
            const res = await api(server.restUrl, madeUpKey(), "/api/v0/organization/users");
            statuses[res.status] = (statuses[res.status] ?? 0) + 1;
            if (res.status === 429) retryAfter.add(res.headers.get("retry-after") ?? "none");
          }
        }),
      ).finally(() => (flooding = false));
      // The valid key, all along, from the same client.
      while (flooding) legit.push((await api(server.restUrl, owner.key, "/api/v0/organization/users")).status);
      await flood;
      const queried = lookups() - before;
      recordFigures("credential flood", {
        madeUpKeys: FLOOD,
        concurrency: CONCURRENCY,
        statuses,
        apiKeyLookups: queried,
        limitPerWindow: DEFAULT_AUTH_FAILURE_LIMITS.perWindow,
        validKeyAnswers: legit.length,
      });
      // Each lookup that found nothing counts; past the limit none reaches Postgres (a few more
      // may be in flight when the limit is crossed).
      expect(queried).toBeLessThanOrEqual(DEFAULT_AUTH_FAILURE_LIMITS.perWindow + CONCURRENCY);
      expect(statuses[401]).toBeLessThanOrEqual(DEFAULT_AUTH_FAILURE_LIMITS.perWindow + CONCURRENCY);
      expect((statuses[401] ?? 0) + (statuses[429] ?? 0)).toBe(FLOOD);
      for (const value of retryAfter) {
        expect(Number(value)).toBeGreaterThanOrEqual(1);
        expect(Number(value)).toBeLessThanOrEqual(60);
      }
      expect(legit.length).toBeGreaterThan(10);
      expect(legit.every((s) => s === 200)).toBe(true);
    }, 120_000);

    it("lets another client's valid key through, and keeps refusing the flooding client's unknown ones", async () => {
      // A key never used before, from the client that flooded: unknown, so refused while it is over its limit.
      const fromFlooder = await api(server.restUrl, idle.key, "/api/v0/organization/users");
      expect(fromFlooder.status).toBe(429);
      // The same key from another client (the edge in front names it in X-Forwarded-For) works.
      const client = grpcClient(OrganizationService, server.grpcUrl, {
        authorization: `Bearer ${idle.key}`,
        "x-forwarded-for": "203.0.113.7",
      });
      try {
        const page = await client.call(OrganizationService.method.listUsers, {});
        expect(page.users.length).toBeGreaterThan(0);
      } finally {
        client.close();
      }
    });

    it("looks an invalid key up once, however often it is presented", async () => {
      const stale = madeUpKey();
      const client = grpcClient(OrganizationService, server.grpcUrl, {
        authorization: `Bearer ${stale}`,
        "x-forwarded-for": "198.51.100.9",
      });
      const before = lookups();
      try {
        for (let i = 0; i < 100; i++)
          await expect(client.call(OrganizationService.method.listUsers, {})).rejects.toMatchObject({ code: 16 });
      } finally {
        client.close();
      }
      expect(lookups() - before).toBe(1);
    });
  },
);
