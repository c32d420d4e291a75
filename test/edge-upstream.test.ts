// The REST edge over its upstream transport (SERVICES=edge, EDGE_UPSTREAM_URL:
// services/edge/upstream-transport.ts) answers what the in-process edge answers: status, body
// and headers (rate-limit headers, request id, the service's own) for successes and errors; and
// it carries on when its upstream is replaced. Real servers on one database and one key-value
// store: a services process with its in-process edge, and an edge alone calling it over gRPC.
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionRunnerService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { setOrganizationRateLimit } from "../services/organization/queries.js";
import type { KeyValueStore } from "../services/platform/kv.js";
import { createLogger } from "../services/platform/logger.js";
import { type RunningServer, startServer } from "../services/server.js";
import { createTestDatabase, type TestDatabase } from "./support/database.js";
import {
  api,
  bearer,
  createTestOrg,
  createTestServiceAccount,
  createTestUser,
  type TestUser,
} from "./support/fixtures.js";
import { grpcClient } from "./support/grpc.js";
import { createTestKv } from "./support/kv.js";
import { testServerConfig } from "./support/server.js";

const logger = createLogger((process.env.TEST_LOG_LEVEL as "silent") ?? "silent");

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

type Answer = Awaited<ReturnType<typeof api>>;

/**
 * An answer without what differs between two requests made one after the other: the date, a
 * generated request id, the rate limit's clock and count (the two edges share one budget).
 */
function comparable(res: Answer) {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (name === "date" || name === "keep-alive" || name === "connection") return;
    headers[name] =
      name === "ratelimit-reset" || name === "retry-after"
        ? "<seconds>"
        : name === "ratelimit-remaining" && Number(value) > 0
          ? "<count>"
          : value;
  });
  const json = res.json === undefined ? undefined : { ...res.json };
  if (json?.requestId !== undefined) json.requestId = "<request id>";
  // The rate limiter's refusal names the seconds left in its window.
  if (typeof json?.detail === "string") json.detail = json.detail.replace(/after \d+ s/, "after <seconds> s");
  if (headers["x-request-id"] !== undefined && !res.text.includes("fixed-request-id"))
    headers["x-request-id"] = "<request id>";
  return { status: res.status, headers, json, text: json === undefined ? res.text : undefined };
}

describe("the REST edge over gRPC to its upstream", () => {
  let database: TestDatabase<Database>;
  let kv: KeyValueStore;
  let grpcPort: number;
  let services: RunningServer;
  let edge: RunningServer;
  let owner: TestUser;
  let guest: TestUser;
  let limited: TestUser;
  let sessionId: string;

  const startServices = () =>
    startServer(testServerConfig({ GRPC_PORT: String(grpcPort), WORKERS: "false" }), logger, {
      database,
      kv,
      workers: false,
    });

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    kv = await createTestKv();
    grpcPort = await freePort();
    services = await startServices();
    edge = await startServer(
      testServerConfig({ SERVICES: "edge", EDGE_UPSTREAM_URL: `http://127.0.0.1:${grpcPort}` }),
      logger,
      { database, kv, workers: false },
    );
    const orgId = await createTestOrg(database.db, "Upstream");
    owner = await createTestUser(database.db, orgId, "owner");
    guest = await createTestUser(database.db, orgId, "guest");
    const limitedOrg = await createTestOrg(database.db, "Upstream limited");
    limited = await createTestUser(database.db, limitedOrg, "owner");
    await setOrganizationRateLimit(database.db, limitedOrg, 1);
    const runner = grpcClient(
      SessionRunnerService,
      services.internalGrpcUrl,
      bearer(await createTestServiceAccount(database.db)),
    );
    try {
      sessionId = (
        await runner.call(SessionRunnerService.method.createSession, {
          orgId,
          userId: owner.userId,
          title: "upstream",
        })
      ).sessionId;
    } finally {
      runner.close();
    }
  }, 60_000);

  afterAll(async () => {
    await edge?.stop();
    await services?.stop();
    await kv?.close();
    await database?.drop();
  });

  /** The same request to both edges; their answers, compared. */
  async function both(
    key: string | undefined,
    path: string,
    init: Parameters<typeof api>[3] = {},
  ): Promise<[Answer, Answer]> {
    const local = await api(services.restUrl!, key, path, init);
    const split = await api(edge.restUrl!, key, path, init);
    expect(comparable(split)).toEqual(comparable(local));
    const remaining = (r: Answer) => Number(r.headers.get("ratelimit-remaining"));
    if (remaining(local) > 0) expect(remaining(split)).toBe(remaining(local) - 1);
    return [local, split];
  }

  it("a read, with the rate-limit headers and a caller's request id", async () => {
    const [, split] = await both(owner.key, `/api/v0/sessions/${sessionId}`, {
      headers: { "x-request-id": "fixed-request-id" },
    });
    expect(split.status).toBe(200);
    expect(split.json.sessionId).toBe(sessionId);
    expect(split.headers.get("x-request-id")).toBe("fixed-request-id");
    expect(split.headers.get("ratelimit-limit")).toBeTruthy();
  });

  it("a list and a write", async () => {
    const [, list] = await both(owner.key, "/api/v0/sessions?limit=5");
    expect(list.status).toBe(200);
    const local = await api(services.restUrl!, owner.key, `/api/v0/sessions/${sessionId}/messages`, {
      method: "POST",
      body: { text: "from the in-process edge" },
    });
    const split = await api(edge.restUrl!, owner.key, `/api/v0/sessions/${sessionId}/messages`, {
      method: "POST",
      body: { text: "from the edge alone" },
    });
    expect([split.status, Object.keys(split.json).sort()]).toEqual([local.status, Object.keys(local.json).sort()]);
  });

  it("errors: unauthenticated, forbidden, not found, invalid argument, rate limited", async () => {
    const [noKey] = await both(undefined, `/api/v0/sessions/${sessionId}`);
    expect(noKey.status).toBe(401);
    const [forbidden] = await both(guest.key, `/api/v0/sessions/${sessionId}/messages`, {
      method: "POST",
      body: { text: "a guest may not" },
    });
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers.get("ratelimit-limit")).toBeTruthy();
    const [missing] = await both(owner.key, "/api/v0/sessions/5f0c6c47-1b7e-4d2a-9a53-8d2f7a1f0c11");
    expect(missing.status).toBe(404);
    const [invalid] = await both(owner.key, "/api/v0/sessions?limit=many");
    expect(invalid.status).toBe(400);
    const [unknown] = await both(owner.key, "/api/v0/nothing-here");
    expect(unknown.status).toBe(404);
    // The budget of one a minute (shared through the store) goes on the first request.
    await api(services.restUrl!, limited.key, `/api/v0/sessions/${sessionId}`);
    const [refused] = await both(limited.key, `/api/v0/sessions/${sessionId}`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBeTruthy();
    expect(refused.headers.get("ratelimit-remaining")).toBe("0");
  });

  it("carries on when the upstream is replaced: 503 while it is away, then answers from the new one", async () => {
    const read = () => api(edge.restUrl!, owner.key, `/api/v0/sessions/${sessionId}`);
    expect((await read()).status).toBe(200);
    // Requests in flight while the upstream drains are answered (GOAWAY lets them finish).
    const during = Array.from({ length: 20 }, () => read());
    await services.stop();
    const answers = await Promise.all(during);
    expect(answers.filter((r) => r.status !== 200 && r.status !== 503).map((r) => `${r.status} ${r.text}`)).toEqual([]);
    const away = await read();
    expect(away.status).toBe(503);
    services = await startServices();
    expect((await read()).status).toBe(200);
  }, 60_000);
});
