// A session's live events end to end (issue 20, item 2): GET /api/v0/sessions/{id}/events read
// by a real SSE client (the `eventsource` package) through the REST edge, resumed with `after`
// and with Last-Event-ID; WatchSessionEvents over gRPC; two servers on one database, a change
// made through one seen by a stream on the other; the stream's end when the session is deleted
// and when the server stops.
import { EventSource } from "eventsource";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import {
  SessionRunnerService,
  SessionService,
  WatchSessionEventsRequestSchema,
} from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { startServer, type RunningServer } from "../services/server.js";
import { createLogger } from "../services/platform/logger.js";
import { createTestDatabase, type TestDatabase } from "./support/database.js";
import {
  api,
  bearer,
  createTestOrg,
  createTestServiceAccount,
  createTestUser,
  type TestUser,
} from "./support/fixtures.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { createTestKv } from "./support/kv.js";
import { testServerConfig } from "./support/server.js";
import { waitForListeners } from "./reliability/support/event-listeners.js";
import { envelope, H2Client } from "./reliability/support/raw-h2.js";
import { closeAgent, send } from "./reliability/support/raw-http.js";

interface Event {
  eventId: string;
  type: string;
  createdAt: number;
  sessionId: string;
  status?: string;
  previousStatus?: string;
  messageId?: string;
  role?: string;
}

/** An EventSource on the edge with the user's key, collecting events (and the SSE ids they came with). */
function watch(restUrl: string, user: TestUser, sessionId: string, query = "") {
  const events: (Event & { lastEventId: string })[] = [];
  const errors: unknown[] = [];
  const source = new EventSource(`${restUrl}/api/v0/sessions/${sessionId}/events${query}`, {
    fetch: (input, init) =>
      fetch(input, { ...init, headers: { ...(init?.headers ?? {}), authorization: `Bearer ${user.key}` } }),
  });
  source.onmessage = (m) => events.push({ ...(JSON.parse(m.data) as Event), lastEventId: m.lastEventId });
  source.onerror = (e) => errors.push(e);
  const opened = new Promise<void>((resolve) => source.addEventListener("open", () => resolve(), { once: true }));
  return { source, events, errors, opened };
}

async function until(check: () => boolean, what: string, ms = 10_000) {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Reads a raw SSE response until it ends; returns its text. */
async function readAll(res: Response): Promise<string> {
  let text = "";
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
    text += decoder.decode(chunk, { stream: true });
  return text;
}

describe("session events", () => {
  let database: TestDatabase<Database>;
  let a: RunningServer;
  let b: RunningServer;
  let member: TestUser;
  let otherMember: TestUser;
  let outsider: TestUser;
  let runner: GrpcCaller;
  let publicGrpc: GrpcCaller;
  const kvs: { close(): Promise<void> }[] = [];

  async function serve(env: Record<string, string> = {}) {
    const kv = await createTestKv();
    kvs.push(kv);
    const config = testServerConfig(env);
    return startServer(config, createLogger(config.logLevel), { database, kv, workers: false });
  }

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    // Two replicas on one database: the change is made through one, watched through the other.
    a = await serve();
    b = await serve();
    const orgId = await createTestOrg(database.db, "Events");
    member = await createTestUser(database.db, orgId, "member");
    otherMember = await createTestUser(database.db, orgId, "member");
    outsider = await createTestUser(database.db, await createTestOrg(database.db, "Elsewhere"), "owner");
    runner = grpcClient(SessionRunnerService, a.internalGrpcUrl, bearer(await createTestServiceAccount(database.db)));
    publicGrpc = grpcClient(SessionService, b.grpcUrl, bearer(member.key));
  });
  afterAll(async () => {
    closeAgent();
    runner?.close();
    publicGrpc?.close();
    await b?.stop();
    await a?.stop();
    for (const kv of kvs) await kv.close();
    await database?.drop();
  });

  const rest = (server: RunningServer, user: TestUser, path: string, init: Parameters<typeof api>[3] = {}) =>
    api(server.restUrl!, user.key, path, init);
  const createSession = async () => {
    const res = await rest(a, member, "/api/v0/sessions", { method: "POST", body: { title: "Watched" } });
    expect(res.status).toBe(201);
    return res.json.sessionId as string;
  };
  /** A whole run, made through replica a: post, claim, reply, finish. */
  async function run(sessionId: string, text: string) {
    const posted = await rest(a, member, `/api/v0/sessions/${sessionId}/messages`, { method: "POST", body: { text } });
    const claim = await runner.call(SessionRunnerService.method.claimSession, { runnerId: "r", orgId: member.orgId });
    expect(claim.session?.sessionId).toBe(sessionId);
    const appended = await runner.call(SessionRunnerService.method.appendMessages, {
      sessionId,
      leaseToken: claim.leaseToken,
      messages: [{ role: "assistant", content: [{ text: `re: ${text}`, id: "b1" }] }],
    });
    await runner.call(SessionRunnerService.method.finishRun, { sessionId, leaseToken: claim.leaseToken });
    return { userMessageId: posted.json.messageId as string, replyId: appended.messageIds[0]! };
  }
  const summary = (events: Event[]) =>
    events.map((e) => (e.type === "message.created" ? `message:${e.role}` : `status:${e.status}`));

  it("an EventSource on replica b receives a run made through replica a, in order, with its ids", async () => {
    const sessionId = await createSession();
    const w = watch(b.restUrl!, member, sessionId);
    await w.opened;
    const { userMessageId, replyId } = await run(sessionId, "first");
    await until(() => w.events.length >= 5, "five events");
    w.source.close();
    expect(summary(w.events)).toEqual([
      "message:user",
      "status:pending",
      "status:running",
      "message:assistant",
      "status:idle",
    ]);
    expect(w.events.map((e) => e.eventId)).toEqual(["1", "2", "3", "4", "5"]);
    expect(w.events.map((e) => e.lastEventId)).toEqual(["1", "2", "3", "4", "5"]);
    expect(w.events[0]).toMatchObject({ sessionId, messageId: userMessageId, role: "user" });
    expect(w.events[3]).toMatchObject({ messageId: replyId, role: "assistant" });
    expect(w.events[2]).toMatchObject({ status: "running", previousStatus: "pending" });
    for (const e of w.events) expect(Math.abs(e.createdAt - Date.now())).toBeLessThan(60_000);
    expect(w.errors).toEqual([]);
  });

  it("resumes with after= and with Last-Event-ID without loss or duplicates", async () => {
    const sessionId = await createSession();
    const first = watch(b.restUrl!, member, sessionId);
    await first.opened;
    await run(sessionId, "one");
    await until(() => first.events.length >= 5, "the first run");
    first.source.close();
    // While nobody watches: a second run.
    await run(sessionId, "two");
    const resumed = watch(b.restUrl!, member, sessionId, "?after=3");
    await until(() => resumed.events.length >= 7, "the rest");
    resumed.source.close();
    expect(resumed.events.map((e) => e.eventId)).toEqual(["4", "5", "6", "7", "8", "9", "10"]);
    // after=0: everything; a reconnecting EventSource's Last-Event-ID (no after): the rest.
    const all = await fetch(`${a.restUrl}/api/v0/sessions/${sessionId}/events?after=0`, {
      headers: { authorization: `Bearer ${member.key}` },
    });
    expect(all.headers.get("content-type")).toBe("text/event-stream");
    const controller = new AbortController();
    const byHeader = await fetch(`${a.restUrl}/api/v0/sessions/${sessionId}/events`, {
      headers: { authorization: `Bearer ${member.key}`, "last-event-id": "8" },
      signal: controller.signal,
    });
    const reader = byHeader.body!.getReader();
    let text = "";
    while (!text.includes("id: 10\n")) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    expect([...text.matchAll(/^id: (\d+)$/gm)].map((m) => m[1])).toEqual(["9", "10"]);
    await all.body?.cancel();
  });

  it("starts with a comment so the client knows it is connected; text/event-stream, no-store", async () => {
    const sessionId = await createSession();
    const controller = new AbortController();
    const res = await fetch(`${b.restUrl}/api/v0/sessions/${sessionId}/events`, {
      headers: { authorization: `Bearer ${member.key}` },
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("cache-control")).toBe("no-store");
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe(": connected\n\n");
    controller.abort();
  });

  it("ends cleanly when the session is deleted", async () => {
    const sessionId = await createSession();
    const res = await fetch(`${b.restUrl}/api/v0/sessions/${sessionId}/events?after=0`, {
      headers: { authorization: `Bearer ${member.key}` },
    });
    const body = readAll(res);
    await new Promise((r) => setTimeout(r, 200));
    expect((await rest(a, member, `/api/v0/sessions/${sessionId}`, { method: "DELETE" })).status).toBe(204);
    const text = await Promise.race([body, new Promise<string>((r) => setTimeout(() => r("STILL OPEN"), 5_000))]);
    expect(text).toBe(": connected\n\n");
  });

  it("refuses what it cannot watch: a bad or unknown after (400 naming it), another's session (404), no key (401)", async () => {
    const sessionId = await createSession();
    const path = `/api/v0/sessions/${sessionId}/events`;
    const bad = await rest(b, member, `${path}?after=abc`);
    expect(bad.status).toBe(400);
    expect(bad.json.detail).toContain("after");
    const beyond = await rest(b, member, `${path}?after=7`);
    expect(beyond.status).toBe(400);
    expect(beyond.json.detail).toContain("after: the session has no event 7 (its last is 0)");
    const header = await rest(b, member, path, { headers: { "last-event-id": "x" } });
    expect(header.status).toBe(400);
    expect(header.json.detail).toContain("Last-Event-ID");
    expect((await rest(b, otherMember, path)).status).toBe(404);
    expect((await rest(b, outsider, path)).status).toBe(404);
    expect((await fetch(`${b.restUrl}${path}`)).status).toBe(401);
  });

  it("WatchSessionEvents over gRPC: the typed events, ending when the session is deleted", async () => {
    const sessionId = await createSession();
    const watching = publicGrpc.serverStream(SessionService.method.watchSessionEvents, { sessionId, after: "0" });
    await new Promise((r) => setTimeout(r, 200));
    await run(sessionId, "over gRPC");
    await new Promise((r) => setTimeout(r, 300));
    await rest(a, member, `/api/v0/sessions/${sessionId}`, { method: "DELETE" });
    const { messages } = await watching;
    expect(summary(messages as Event[])).toEqual([
      "message:user",
      "status:pending",
      "status:running",
      "message:assistant",
      "status:idle",
    ]);
  });

  it("a client that leaves during the replay ends the stream on the server: nothing is left holding the LISTEN connection", async () => {
    const sessionId = await createSession();
    await run(sessionId, "replayed to a client that leaves");
    for (let i = 0; i < 10; i++) {
      const res = await send(b.restUrl!, {
        method: "GET",
        target: `/api/v0/sessions/${sessionId}/events?after=0`,
        headers: { authorization: `Bearer ${member.key}` },
        until: (_head, body) => body.length > 0,
      });
      expect(res.status).toBe(200);
      expect(res.cut).toBe(true);
    }
    // The edge once stopped writing without ending the service's stream, which then stayed
    // suspended with its wake-up subscription, and so the LISTEN connection, until the process ended.
    expect(await waitForListeners(database.db, (n) => n === 0)).toBe(0);
  });

  it("WatchSessionEvents whose deadline passes ends DEADLINE_EXCEEDED, not OK as for a deleted session", async () => {
    const sessionId = await createSession();
    const client = new H2Client(b.grpcUrl);
    try {
      const res = await client.request(
        {
          path: `/${SessionService.typeName}/WatchSessionEvents`,
          headers: {
            "content-type": "application/grpc",
            te: "trailers",
            "grpc-timeout": "300m",
            authorization: `Bearer ${member.key}`,
          },
          body: [
            envelope(
              0,
              toBinary(WatchSessionEventsRequestSchema, create(WatchSessionEventsRequestSchema, { sessionId })),
            ),
          ],
        },
        10_000,
      );
      expect(res.trailers["grpc-status"] ?? res.headers["grpc-status"]).toBe(String(Code.DeadlineExceeded));
    } finally {
      client.close();
    }
  });

  it("a server that stops ends its streams cleanly, so that the drain completes and clients resume elsewhere", async () => {
    const c = await serve();
    const sessionId = await createSession();
    const res = await fetch(`${c.restUrl}/api/v0/sessions/${sessionId}/events`, {
      headers: { authorization: `Bearer ${member.key}` },
    });
    const body = readAll(res);
    await new Promise((r) => setTimeout(r, 200));
    const started = performance.now();
    await c.stop();
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(await body).toBe(": connected\n\n");
  });

  it("outlives the request timeout, which bounds every other call (both edges give its route none)", async () => {
    const c = await serve({ REQUEST_TIMEOUT_MS: "300" });
    try {
      const sessionId = await createSession();
      const w = watch(c.restUrl!, member, sessionId);
      await w.opened;
      await new Promise((r) => setTimeout(r, 900));
      await rest(a, member, `/api/v0/sessions/${sessionId}/messages`, { method: "POST", body: { text: "late" } });
      await until(() => w.events.length >= 2, "the events after the timeout");
      w.source.close();
      expect(summary(w.events)).toEqual(["message:user", "status:pending"]);
      expect(w.errors).toEqual([]);
      // Drain what a runner would otherwise claim in another test.
      await rest(a, member, `/api/v0/sessions/${sessionId}/interrupt`, { method: "POST" });
    } finally {
      await c.stop();
    }
  });
});
