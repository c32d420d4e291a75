// @agentplane/client against the real server (every module, a fresh database): each protocol
// lists the sessions it created, the key goes out as a bearer credential, UNAVAILABLE is retried
// by the rule in src/retry.ts (through a TCP proxy that cuts connections), and deadlines bound
// each call, its retries included.
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestOrg, createTestUser, type TestUser } from "../../../test/support/fixtures.js";
import { startTestServer, type TestServer } from "../../../test/support/server.js";
import { startTcpProxy, type TcpProxy } from "../../../test/support/tcp-proxy.js";
import { type AgentplaneClientOptions, createAgentplaneClient, PROTOCOLS } from "../src/index.js";

let server: TestServer;
let owner: TestUser;
let proxy: TcpProxy;

beforeAll(async () => {
  server = await startTestServer();
  const db = server.database.db;
  owner = await createTestUser(db, await createTestOrg(db), "owner");
  const port = Number(new URL(server.grpcUrl).port);
  proxy = await startTcpProxy("127.0.0.1", port);
});

afterAll(async () => {
  await proxy?.close();
  await server?.close();
});

/** An interceptor that counts the attempts it sees (it runs inside the retries). */
function attemptCounter(): { interceptor: Interceptor; count: () => number } {
  let n = 0;
  return {
    interceptor: (next) => (req) => {
      n++;
      return next(req);
    },
    count: () => n,
  };
}

const viaProxy = (extra: Partial<AgentplaneClientOptions> = {}) =>
  createAgentplaneClient({ baseUrl: `http://127.0.0.1:${proxy.port}`, apiKey: owner.key, ...extra });

async function codeOf(call: Promise<unknown>): Promise<Code> {
  try {
    await call;
  } catch (err) {
    return ConnectError.from(err).code;
  }
  throw new Error("the call succeeded");
}

describe("the typed clients", () => {
  it.each(PROTOCOLS)("list the sessions the caller created, over %s", async (protocol) => {
    const client = createAgentplaneClient({ baseUrl: server.grpcUrl, apiKey: owner.key, protocol });
    const created = await client.sessions.createSession({ title: `over ${protocol}` });
    const listed = await client.sessions.listSessions({ limit: "100" });
    expect(listed.sessions.map((s) => s.sessionId)).toContain(created.sessionId);
    expect(listed.sessions.find((s) => s.sessionId === created.sessionId)?.title).toBe(`over ${protocol}`);
    // Another service on the same transport.
    const users = await client.organization.listUsers({});
    expect(users.users.map((u) => u.email)).toContain(owner.email);
  });

  it("send the key as a bearer credential: a wrong one is UNAUTHENTICATED", async () => {
    const client = createAgentplaneClient({ baseUrl: server.grpcUrl, apiKey: "apk_not_a_key" });
    expect(await codeOf(client.sessions.listSessions({}))).toBe(Code.Unauthenticated);
  });

  it("refuse options they cannot use", () => {
    const base = { baseUrl: server.grpcUrl, apiKey: owner.key };
    expect(() => createAgentplaneClient({ ...base, baseUrl: "ftp://x" })).toThrow(
      /baseUrl must be an http or https URL/,
    );
    expect(() => createAgentplaneClient({ ...base, apiKey: "" })).toThrow(/apiKey is required/);
    expect(() => createAgentplaneClient({ ...base, protocol: "rest" as never })).toThrow(/protocol must be one of/);
    expect(() => createAgentplaneClient({ ...base, timeoutMs: -1 })).toThrow(/timeoutMs must be 0/);
    expect(() => createAgentplaneClient({ ...base, retry: { maxAttempts: 0 } })).toThrow(/maxAttempts/);
  });
});

describe("retries", () => {
  it("retry a read through connections cut until the server is back", async () => {
    const attempts = attemptCounter();
    const client = viaProxy({ interceptors: [attempts.interceptor], retry: { maxAttempts: 8, baseDelayMs: 50 } });
    proxy.cut();
    const restore = setTimeout(() => proxy.restore(), 400);
    try {
      const listed = await client.sessions.listSessions({});
      expect(listed.sessions).toBeDefined();
      expect(attempts.count()).toBeGreaterThan(1);
    } finally {
      clearTimeout(restore);
      proxy.restore();
    }
  });

  it("give up on a read after maxAttempts, UNAVAILABLE", async () => {
    const attempts = attemptCounter();
    const client = viaProxy({ interceptors: [attempts.interceptor], retry: { maxAttempts: 3, baseDelayMs: 10 } });
    proxy.cut();
    try {
      expect(await codeOf(client.sessions.listSessions({}))).toBe(Code.Unavailable);
      expect(attempts.count()).toBe(3);
    } finally {
      proxy.restore();
    }
  });

  it("do not retry a write whose connection broke: it may have been applied", async () => {
    const attempts = attemptCounter();
    const client = viaProxy({ interceptors: [attempts.interceptor], retry: { maxAttempts: 4, baseDelayMs: 10 } });
    proxy.cut();
    try {
      expect(await codeOf(client.sessions.createSession({ title: "not twice" }))).toBe(Code.Unavailable);
      expect(attempts.count()).toBe(1);
    } finally {
      proxy.restore();
    }
  });

  it("retry a write whose connection was refused: it never reached a server", async () => {
    // A port nobody listens on: every attempt is ECONNREFUSED.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const attempts = attemptCounter();
    const client = createAgentplaneClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: owner.key,
      interceptors: [attempts.interceptor],
      retry: { maxAttempts: 3, baseDelayMs: 10 },
    });
    expect(await codeOf(client.sessions.createSession({ title: "refused" }))).toBe(Code.Unavailable);
    expect(attempts.count()).toBe(3);
  });

  it("are off with retry: false", async () => {
    const attempts = attemptCounter();
    const client = viaProxy({ interceptors: [attempts.interceptor], retry: false });
    proxy.cut();
    try {
      expect(await codeOf(client.sessions.listSessions({}))).toBe(Code.Unavailable);
      expect(attempts.count()).toBe(1);
    } finally {
      proxy.restore();
    }
  });
});

describe("deadlines", () => {
  it("end a call the server does not answer in time (the client default), and a call's own timeoutMs overrides it", async () => {
    const client = viaProxy({ timeoutMs: 400, retry: false });
    await client.sessions.listSessions({}); // the connection the stall will hold
    proxy.stall();
    try {
      let started = Date.now();
      expect(await codeOf(client.sessions.listSessions({}))).toBe(Code.DeadlineExceeded);
      const byDefault = Date.now() - started;
      expect(byDefault).toBeGreaterThanOrEqual(350);
      expect(byDefault).toBeLessThan(5000);
      started = Date.now();
      expect(await codeOf(client.sessions.listSessions({}, { timeoutMs: 100 }))).toBe(Code.DeadlineExceeded);
      expect(Date.now() - started).toBeLessThan(byDefault);
    } finally {
      proxy.cut(); // drops the stalled connections
      proxy.restore();
    }
  });

  it("cover the retries: a call retrying for longer than its deadline ends at the deadline", async () => {
    const attempts = attemptCounter();
    const client = viaProxy({
      timeoutMs: 300,
      interceptors: [attempts.interceptor],
      retry: { maxAttempts: 50, baseDelayMs: 100, maxDelayMs: 100 },
    });
    proxy.cut();
    try {
      const started = Date.now();
      expect(await codeOf(client.sessions.listSessions({}))).toBe(Code.DeadlineExceeded);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(attempts.count()).toBeGreaterThan(1);
      expect(attempts.count()).toBeLessThan(50);
    } finally {
      proxy.restore();
    }
  });

  it("are sent to the server, which works to the same deadline", async () => {
    const seen: (string | null)[] = [];
    const client = createAgentplaneClient({
      baseUrl: server.grpcUrl,
      apiKey: owner.key,
      protocol: "grpc",
      timeoutMs: 5000,
      interceptors: [
        (next) => async (req) => {
          const res = await next(req);
          seen.push(req.header.get("grpc-timeout"));
          return res;
        },
      ],
    });
    await client.sessions.listSessions({});
    await client.sessions.listSessions({}, { timeoutMs: 0 });
    expect(seen[0]).toMatch(/^\d+m$/);
    expect(Number(seen[0]!.slice(0, -1))).toBeLessThanOrEqual(5000);
    expect(seen[1]).toBeNull();
  });
});
