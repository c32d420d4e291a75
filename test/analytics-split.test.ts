// /tokens of a large organization through the deployed shape (issue 19): the REST edge in its own
// process (SERVICES=edge, standing in for Envoy) calling a services process over gRPC, against the
// in-process edge of a process running everything. 600 users for 90 days is about 12 MiB of JSON,
// past the 8 MiB envoy.yaml allows a unary answer: it goes out as a StreamTokens HttpBody stream,
// chunk by chunk, so the edge process never holds it whole. The CSV and NDJSON exports (issue 21)
// take the same path, /users with every row of the range in one answer.
import { request as httpRequest } from "node:http";
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addDays, dayOf } from "../services/analytics/dates.js";
import { writeAnalyticsDemo } from "../services/analytics/demo.js";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import {
  createApiKey,
  createOrganization,
  createUser,
  setOrganizationRateLimit,
} from "../services/organization/queries.js";
import { createTestDatabase, type TestDatabase } from "./support/database.js";
import { startServeProcess, type ServeProcess } from "./reliability/support/serve-process.js";

const REAL = Boolean(process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL);
const USERS = 600;
const DAYS = 90;
const BACKEND = "analytics,readiness,sessions,computers,organization";

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function get(url: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/** The process's peak resident set (VmHWM), in MiB. */
function peakRssMiB(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m![1]) / 1024;
}

describe.skipIf(!REAL)(
  `/tokens of ${USERS} users for ${DAYS} days through the split topology${REAL ? "" : " (skipped: needs TEST_DATABASE_URL and TEST_REDIS_URL)"}`,
  () => {
    let database: TestDatabase<Database>;
    const processes: ServeProcess[] = [];
    let inProcess: ServeProcess;
    let edge: ServeProcess;
    let key: string;
    let path: string;

    beforeAll(async () => {
      database = await createTestDatabase<Database>(migrations);
      const org = await createOrganization(database.db, { name: "Split", plan: "enterprise" });
      await setOrganizationRateLimit(database.db, org.id, 1_000_000);
      const owner = await createUser(database.db, { orgId: org.id, email: "owner@split.test", role: "owner" });
      ({ key } = await createApiKey(database.db, org.id, owner.id));
      await writeAnalyticsDemo(database.db, org.id, { users: USERS, days: DAYS });
      const yesterday = addDays(dayOf(Date.now()), -1);
      path = `/api/v1/analytics/tokens?startDate=${addDays(yesterday, -(DAYS - 1))}&endDate=${yesterday}`;
      const env = { DATABASE_URL: database.url, REDIS_URL: process.env.TEST_REDIS_URL!, WORKERS: "false" };
      const [all, backend] = await Promise.all([
        startServeProcess(env),
        startServeProcess({ ...env, SERVICES: BACKEND }),
      ]);
      processes.push(all, backend);
      inProcess = all;
      edge = await startServeProcess({ ...env, SERVICES: "edge", EDGE_UPSTREAM_URL: backend.grpcUrl });
      processes.push(edge);
    }, 600_000);

    afterAll(async () => {
      await Promise.all(processes.map((p) => p.terminate()));
      await database?.drop();
    }, 60_000);

    it("answers 200 with the same bytes as the in-process edge, as text and as gzip, past Envoy's 8 MiB unary cap", async () => {
      const auth = { authorization: `Bearer ${key}` };
      const before = peakRssMiB(edge.child.pid!);
      const plain = await get(inProcess.restUrl! + path, { ...auth, "accept-encoding": "identity" });
      expect(plain.status).toBe(200);
      expect(plain.body.length).toBeGreaterThan(8 * 1024 * 1024);
      const parsed = JSON.parse(plain.body.toString()) as { data: unknown[]; meta: { org_id: string } };
      expect(parsed.data).toHaveLength(DAYS);

      const split = await get(edge.restUrl! + path, { ...auth, "accept-encoding": "identity" });
      expect(split.status).toBe(200);
      expect(split.headers["content-encoding"]).toBeUndefined();
      expect(split.body.equals(plain.body)).toBe(true);
      expect(split.headers["etag"]).toBe(plain.headers["etag"]);

      const [packedHere, packedSplit] = await Promise.all([
        get(inProcess.restUrl! + path, { ...auth, "accept-encoding": "gzip" }),
        get(edge.restUrl! + path, { ...auth, "accept-encoding": "gzip" }),
      ]);
      for (const packed of [packedHere, packedSplit]) {
        expect(packed.status).toBe(200);
        expect(packed.headers["content-encoding"]).toBe("gzip");
        expect(packed.body.length).toBeLessThan(plain.body.length / 4);
        expect(gunzipSync(packed.body).equals(plain.body)).toBe(true);
      }
      expect(packedSplit.body.equals(packedHere.body)).toBe(true);
      expect(packedSplit.headers["etag"]).toBe(packedHere.headers["etag"]);

      const peak = peakRssMiB(edge.child.pid!);
      console.log(`edge process peak RSS: ${before.toFixed(0)} MiB before, ${peak.toFixed(0)} MiB after serving`);
      expect(peak).toBeLessThan(300);
    }, 120_000);

    it("streams the CSV and NDJSON exports (every /users row of the range in one answer) with the same bytes as the in-process edge", async () => {
      const auth = { authorization: `Bearer ${key}` };
      const range = path.slice(path.indexOf("?"));
      const before = peakRssMiB(edge.child.pid!);
      for (const endpoint of ["tokens", "users", "tools"]) {
        for (const format of ["csv", "ndjson"]) {
          const url = `/api/v1/analytics/${endpoint}${range}&format=${format}`;
          for (const coding of ["identity", "gzip"]) {
            const headers = { ...auth, "accept-encoding": coding };
            const [here, split] = await Promise.all([
              get(inProcess.restUrl! + url, headers),
              get(edge.restUrl! + url, headers),
            ]);
            expect(here.status, here.body.toString().slice(0, 300)).toBe(200);
            expect(split.status).toBe(200);
            expect(split.body.equals(here.body)).toBe(true);
            for (const name of ["content-type", "content-disposition", "content-encoding", "etag", "vary"])
              expect(split.headers[name], name).toEqual(here.headers[name]);
            const text = (coding === "gzip" ? gunzipSync(here.body) : here.body).toString("utf8");
            const lines = text.split(format === "csv" ? "\r\n" : "\n").length - 1;
            if (endpoint === "tokens") expect(lines).toBe(DAYS + (format === "csv" ? 1 : 0));
            if (endpoint === "users") expect(lines).toBeGreaterThan(USERS * 10);
          }
        }
      }
      // The JSON of a route that moved to an HttpBody stream: the same bytes through both edges.
      const tools = `/api/v1/analytics/tools${range}`;
      const [here, split] = await Promise.all([
        get(inProcess.restUrl! + tools, auth),
        get(edge.restUrl! + tools, auth),
      ]);
      expect(split.body.equals(here.body)).toBe(true);
      expect(split.headers["content-type"]).toBe("application/json");
      const peak = peakRssMiB(edge.child.pid!);
      console.log(`edge process peak RSS: ${before.toFixed(0)} MiB before the exports, ${peak.toFixed(0)} MiB after`);
      expect(peak).toBeLessThan(300);
    }, 180_000);
  },
);
