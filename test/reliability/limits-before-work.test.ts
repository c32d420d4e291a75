// Limits before work, on the real binary's gRPC listeners: an unauthenticated request is refused
// from its headers while its 300 MB body is still coming, so it costs the server no memory; an
// authenticated one announcing more than the 32 MiB message limit is refused from the length
// it announces. The server's resident memory is sampled from /proc throughout.
import { readFileSync } from "node:fs";
import { connect, constants, type ClientHttp2Session } from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../services/database.js";
import { migrations } from "../../services/migrations.js";
import { createTestOrg, createTestServiceAccount, createTestUser } from "../support/fixtures.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { recordFigures } from "./support/figures.js";
import { startServeProcess, type ServeProcess } from "./support/serve-process.js";

const REAL = Boolean(process.env.TEST_DATABASE_URL);
const BODY_BYTES = 300 * 1024 * 1024;
const STREAMS = 8;
const CHUNK = Buffer.alloc(1024 * 1024);
/** Growth of the server's resident memory allowed over the whole test. */
const RSS_BOUND = 64 * 1024 * 1024;

function rssOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"))!;
  return Number(/(\d+)/.exec(line)![1]) * 1024;
}

interface Outcome {
  status: number;
  grpcStatus: string | undefined;
  bytesSent: number;
  ms: number;
}

/**
 * Sends a request whose body is `BODY_BYTES` long (a gRPC frame announcing all of it, or a
 * Connect body with that Content-Length), as fast as the server takes it, until the server
 * answers and ends the stream.
 */
function send(
  session: ClientHttp2Session,
  path: string,
  headers: Record<string, string>,
  grpc: boolean,
): Promise<Outcome> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = session.request({
      [constants.HTTP2_HEADER_METHOD]: "POST",
      [constants.HTTP2_HEADER_PATH]: path,
      ...headers,
    });
    let status = 0;
    let grpcStatus: string | undefined;
    let sent = 0;
    let done = false;
    req.on("response", (h) => {
      status = Number(h[":status"]);
      if (h["grpc-status"] !== undefined) grpcStatus = String(h["grpc-status"]);
    });
    req.on("trailers", (t) => {
      if (t["grpc-status"] !== undefined) grpcStatus = String(t["grpc-status"]);
    });
    req.on("data", () => {});
    // The server answers, then resets the stream (NO_ERROR) while this side is still sending:
    // the answer has ended ("end"), or the stream is aborted with it.
    const finish = () => {
      if (done) return;
      done = true;
      resolve({ status, grpcStatus, bytesSent: sent, ms: Math.round(performance.now() - started) });
    };
    req.on("end", finish);
    req.on("aborted", finish);
    req.on("close", finish);
    req.on("error", (err) => (status ? finish() : reject(err)));
    const pump = () => {
      while (!done && sent < BODY_BYTES && !req.destroyed && !req.closed) {
        let chunk = CHUNK;
        if (grpc && sent === 0) {
          chunk = Buffer.alloc(CHUNK.length);
          chunk.writeUInt8(0, 0);
          chunk.writeUInt32BE(BODY_BYTES - 5, 1);
        }
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once("drain", pump);
      }
      if (sent >= BODY_BYTES && !req.closed) req.end();
    };
    pump();
  });
}

describe.skipIf(!REAL)(
  `limits before work${REAL ? "" : " (skipped: needs TEST_DATABASE_URL: the real binary runs in its own process)"}`,
  () => {
    let database: TestDatabase<Database>;
    let server: ServeProcess;
    let token: string;
    let apiKey: string;
    let peak = 0;
    let sampler: NodeJS.Timeout | undefined;

    beforeAll(async () => {
      database = await createTestDatabase<Database>(migrations);
      const orgId = await createTestOrg(database.db);
      apiKey = (await createTestUser(database.db, orgId, "owner")).key;
      token = await createTestServiceAccount(database.db, { orgId });
      server = await startServeProcess({
        DATABASE_URL: database.url,
        REDIS_URL: process.env.TEST_REDIS_URL ?? "",
        SERVICES: "all",
      });
    }, 120_000);
    afterAll(async () => {
      clearInterval(sampler);
      await server?.terminate();
      await database?.drop();
    });

    it("refuses 300 MB requests from their headers, costing no memory", async () => {
      const pid = server.child.pid!;
      // A connection per request, as many clients (Node's HTTP/2 refuses a burst of streams that
      // are each answered while still uploading with ENHANCE_YOUR_CALM, which would hide the answers).
      const sessions: ClientHttp2Session[] = [];
      const internalAt = () => sessions[sessions.push(connect(server.internalGrpcUrl).on("error", () => {})) - 1]!;
      const publicAt = () => sessions[sessions.push(connect(server.grpcUrl).on("error", () => {})) - 1]!;
      // Warm up both listeners with refused calls, then measure.
      await Promise.all(
        [internalAt(), publicAt()].map((s) =>
          send(
            s,
            "/agentplane.analytics.v1.TelemetryService/Ingest",
            { "content-type": "application/json" },
            false,
          ).catch(() => undefined),
        ),
      );
      const before = rssOf(pid);
      peak = before;
      sampler = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 20);
      const ingest = "/agentplane.analytics.v1.TelemetryService/Ingest";
      const listUsers = "/agentplane.organization.v1alpha1.OrganizationService/ListUsers";
      const cases: Array<{
        name: string;
        session: ClientHttp2Session;
        path: string;
        headers: Record<string, string>;
        grpc: boolean;
        expect: { grpcStatus?: string; status?: number };
      }> = [
        // No credential: refused before the body, in each protocol.
        ...Array.from({ length: STREAMS }, () => ({
          name: "gRPC, no credential",
          session: internalAt(),
          path: ingest,
          headers: { "content-type": "application/grpc" },
          grpc: true,
          expect: { grpcStatus: "16" },
        })),
        {
          name: "Connect, no credential",
          session: internalAt(),
          path: ingest,
          headers: { "content-type": "application/json", "content-length": String(BODY_BYTES) },
          grpc: false,
          expect: { status: 401 },
        },
        {
          name: "gRPC-Web, user key on a runner-only method",
          session: internalAt(),
          path: "/agentplane.analytics.v1.TelemetryService/Rollup",
          headers: { "content-type": "application/grpc-web+proto", authorization: `Bearer ${apiKey}` },
          grpc: true,
          expect: { status: 200 },
        },
        {
          name: "gRPC public, made-up key",
          session: publicAt(),
          path: listUsers,
          headers: { "content-type": "application/grpc", authorization: "Bearer apk_madeup" },
          grpc: true,
          expect: { grpcStatus: "16" },
        },
        // Authenticated, but announcing more than the message limit: refused from the announced length.
        {
          name: "gRPC, authenticated, 300 MB frame",
          session: internalAt(),
          path: ingest,
          headers: { "content-type": "application/grpc", authorization: `Bearer ${token}` },
          grpc: true,
          expect: { grpcStatus: "8" },
        },
        {
          name: "Connect, authenticated, 300 MB body",
          session: internalAt(),
          path: ingest,
          headers: {
            "content-type": "application/json",
            "content-length": String(BODY_BYTES),
            authorization: `Bearer ${token}`,
          },
          grpc: false,
          expect: { status: 429 },
        },
      ];
      const outcomes = await Promise.all(
        cases.map((c) =>
          send(c.session, c.path, c.headers, c.grpc).then((o) => ({ ...o, name: c.name, expect: c.expect })),
        ),
      );
      clearInterval(sampler);
      for (const s of sessions) s.destroy();
      const after = rssOf(pid);
      recordFigures("limits before work", {
        requests: outcomes.length,
        announcedBytesEach: BODY_BYTES,
        sentMiBMax: Math.round(Math.max(...outcomes.map((o) => o.bytesSent)) / 1024 / 1024),
        slowestMs: Math.max(...outcomes.map((o) => o.ms)),
        rssBeforeMiB: Math.round(before / 1024 / 1024),
        rssPeakMiB: Math.round(peak / 1024 / 1024),
        rssAfterMiB: Math.round(after / 1024 / 1024),
      });
      for (const o of outcomes) {
        if (o.expect.grpcStatus !== undefined) expect([o.name, o.grpcStatus]).toEqual([o.name, o.expect.grpcStatus]);
        if (o.expect.status !== undefined) expect([o.name, o.status]).toEqual([o.name, o.expect.status]);
        // Refused long before the body was sent: the server stopped the client's upload.
        expect(o.bytesSent, o.name).toBeLessThan(BODY_BYTES / 4);
      }
      expect(peak - before).toBeLessThan(RSS_BOUND);
      // The server is still fine.
      expect(server.child.exitCode).toBeNull();
    }, 120_000);

    it("stays up when clients cancel their calls while the credential is being checked", async () => {
      const pid = server.child.pid!;
      const ingest = "/agentplane.analytics.v1.TelemetryService/Ingest";
      // Made-up keys make the check query Postgres; the cancel arrives meanwhile, and the answer
      // (accepted or refused) then finds the stream gone.
      const credentials = ["", "Bearer aps_madeup", `Bearer ${token}`, `Bearer ${apiKey}`];
      let cancelled = 0;
      for (let round = 0; round < 5; round++) {
        const session = connect(server.internalGrpcUrl);
        session.on("error", () => {});
        await Promise.all(
          Array.from({ length: 60 }, (_, i) => {
            const authorization = credentials[i % credentials.length]!.replace("aps_madeup", `aps_madeup${round}x${i}`);
            const req = session.request({
              ":method": "POST",
              ":path": ingest,
              "content-type": i % 2 ? "application/grpc" : "application/json",
              ...(authorization ? { authorization } : {}),
            });
            req.on("error", () => {});
            req.write(Buffer.from([0, 0, 0, 0, 0]));
            return new Promise<void>((resolve) => {
              setImmediate(() => {
                req.close(constants.NGHTTP2_CANCEL);
                cancelled++;
                resolve();
              });
            });
          }),
        );
        session.destroy();
      }
      await new Promise((r) => setTimeout(r, 500));
      expect(cancelled).toBe(300);
      expect(server.child.exitCode, server.output().slice(-2000)).toBeNull();
      // And it still answers.
      const health = connect(server.grpcUrl);
      health.on("error", () => {});
      try {
        const status = await new Promise<string | undefined>((resolve, reject) => {
          const req = health.request({
            ":method": "POST",
            ":path": "/grpc.health.v1.Health/Check",
            "content-type": "application/grpc",
          });
          let grpcStatus: string | undefined;
          req.on("response", (h) => (grpcStatus = h["grpc-status"] as string | undefined));
          req.on("trailers", (t) => (grpcStatus = t["grpc-status"] as string | undefined));
          req.on("data", () => {});
          req.on("end", () => resolve(grpcStatus));
          req.on("error", reject);
          req.end(Buffer.from([0, 0, 0, 0, 0]));
        });
        expect(status).toBe("0");
      } finally {
        health.destroy();
      }
      expect(rssOf(pid)).toBeGreaterThan(0);
    }, 60_000);
  },
);
