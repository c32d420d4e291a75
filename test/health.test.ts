// grpc.health.v1.Health/Check reflects the real state of Postgres: SERVING, then NOT_SERVING
// while the database is unreachable, then SERVING again once it is back.
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../gen/grpc/health/v1/health_pb.js";
import { OrganizationService } from "../gen/agentplane/organization/v1alpha1/organization_pb.js";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { loadConfig } from "../services/config.js";
import { openDatabase, type Database as DatabaseHandle } from "../services/platform/db.js";
import { IN_MEMORY_DATA_DIR } from "../services/platform/pglite.js";
import { startServer, type RunningServer } from "../services/server.js";
import { createTestDatabase, testLogger, type TestDatabase } from "./support/database.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { envelope, H2Client } from "./reliability/support/raw-h2.js";
import { createTestKv } from "./support/kv.js";
import { startTcpProxy, type TcpProxy } from "./support/tcp-proxy.js";
import type { KeyValueStore } from "../services/platform/kv.js";

async function waitFor(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("grpc.health.v1.Health", () => {
  let testDb: TestDatabase<Database>;
  let proxy: TcpProxy;
  let viaProxy: DatabaseHandle<Database>;
  let kv: KeyValueStore;
  let server: RunningServer;
  let health: GrpcCaller;

  beforeAll(async () => {
    testDb = await createTestDatabase<Database>(migrations);
    const target = new URL(testDb.url);
    proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    target.port = String(proxy.port);
    viaProxy = await openDatabase<Database>({
      databaseUrl: target.toString(),
      dataDir: IN_MEMORY_DATA_DIR,
      logger: testLogger(),
      poolMax: 2,
    });
    kv = await createTestKv();
    const config = loadConfig({
      PORT: "0",
      GRPC_PORT: "0",
      INTERNAL_GRPC_PORT: "0",
      LOG_LEVEL: "silent",
      SEED_DEMO: "false",
      SERVICES: "organization",
    });
    server = await startServer(config, testLogger(), { database: viaProxy, kv, workers: false });
    health = grpcClient(Health, server.grpcUrl);
  });
  afterAll(async () => {
    health?.close();
    await server?.stop();
    await viaProxy?.close();
    await kv?.close();
    await proxy?.close();
    await testDb?.drop();
  });

  const check = (service = "") => health.call(Health.method.check, { service });

  it("answers SERVING for the server and for each served service", async () => {
    expect((await check()).status).toBe(Status.SERVING);
    expect((await check(OrganizationService.typeName)).status).toBe(Status.SERVING);
  });

  it("answers NOT_FOUND for a service this process does not serve", async () => {
    await expect(check("agentplane.sessions.v1alpha1.SessionService")).rejects.toMatchObject({ code: 5 });
  });

  it("answers NOT_FOUND with a bounded message for a huge unknown name, and the connection lives on", async () => {
    // Found by the RPC fuzzer: the name came back whole in grpc-message; hundreds of kB of
    // trailers ended the server's HTTP/2 session (every call on it), not just this call.
    // 60,000 bytes: within the 64 KiB the open services take (OPEN_SERVICE_MAX_REQUEST_BYTES).
    const err = await check("é".repeat(30_000)).then(
      () => undefined,
      (e: { code: number; details: string }) => e,
    );
    expect(err?.code).toBe(5); // NOT_FOUND
    // 180 kB percent-encoded; grpc-js decodes what it receives.
    expect(err!.details.length).toBeLessThanOrEqual(1024);
    expect(err!.details).toMatch(/^unknown service é+… \(message truncated\)$/);
    expect((await check()).status).toBe(Status.SERVING);
  });

  it("takes requests of 64 KiB at most: open to anyone, it holds little for them", async () => {
    const err = await check("é".repeat(40_000)).then(
      () => undefined,
      (e: { code: number; details: string }) => e,
    );
    expect(err?.code).toBe(8); // RESOURCE_EXHAUSTED
    expect(decodeURIComponent(err!.details)).toBe("message size 80004 is larger than configured readMaxBytes 65536");
    expect((await check()).status).toBe(Status.SERVING);
  });

  it("Watch ends at its deadline with DEADLINE_EXCEEDED, after the current status", async () => {
    // Found by the RPC fuzzer: at the deadline the stream ended OK, with no status at all when
    // the deadline was 0. A raw HTTP/2 client, because client libraries enforce the deadline
    // themselves and would hide what the server answers.
    const client = new H2Client(server.grpcUrl);
    try {
      for (const timeout of ["300m", "0n", "1m"]) {
        const started = Date.now();
        const res = await client.request(
          {
            path: `/${Health.typeName}/Watch`,
            headers: { "content-type": "application/grpc", te: "trailers", "grpc-timeout": timeout },
            body: [envelope(0, new Uint8Array())],
          },
          10_000,
        );
        expect(res.trailers["grpc-status"] ?? res.headers["grpc-status"], `grpc-timeout ${timeout}`).toBe(
          String(Code.DeadlineExceeded),
        );
        // At the deadline, not at the next status poll (every 2 s).
        expect(Date.now() - started, `grpc-timeout ${timeout}`).toBeLessThan(1_500);
        // The current status first (SERVING: field 1 = 1), when the deadline leaves time for it.
        if (timeout === "300m") expect(res.body).toEqual(envelope(0, new Uint8Array([0x08, 0x01])));
      }
    } finally {
      client.close();
    }
  });

  it("answers NOT_SERVING while Postgres is unreachable, SERVING once it is back", async () => {
    proxy.cut();
    await waitFor(async () => (await check()).status === Status.NOT_SERVING);
    proxy.restore();
    await waitFor(async () => (await check()).status === Status.SERVING);
  });
});
