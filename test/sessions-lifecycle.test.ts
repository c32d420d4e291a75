// A session's lifecycle through the public API (issue 20, item 1): POST /api/v0/sessions (201),
// POST /api/v0/sessions/{id}/interrupt and DELETE /api/v0/sessions/{id} (204), through the REST
// edge and over gRPC with a @grpc/grpc-js client, with a runner on the internal port.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionRunnerService, SessionService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import {
  api,
  bearer,
  createTestOrg,
  createTestServiceAccount,
  createTestUser,
  type TestUser,
} from "./support/fixtures.js";
import { expectErrorBody } from "./support/error-body.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { startTestServer, type TestServer } from "./support/server.js";

describe("session lifecycle", () => {
  let server: TestServer;
  let owner: TestUser;
  let member: TestUser;
  let otherMember: TestUser;
  let guest: TestUser;
  let outsider: TestUser;
  let runner: GrpcCaller;
  let publicGrpc: GrpcCaller;
  let computerId: string;
  let outsidersComputerId: string;

  const rest = (user: TestUser | undefined, path: string, init: Parameters<typeof api>[3] = {}) =>
    api(server.restUrl, user?.key, path, init);
  const createRest = (user: TestUser, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    rest(user, "/api/v0/sessions", { method: "POST", body, headers });
  const claim = () => runner.call(SessionRunnerService.method.claimSession, { runnerId: "r1", orgId: member.orgId });

  beforeAll(async () => {
    server = await startTestServer();
    const db = server.platform.db;
    const orgId = await createTestOrg(db, "Lifecycle");
    owner = await createTestUser(db, orgId, "owner");
    member = await createTestUser(db, orgId, "member");
    otherMember = await createTestUser(db, orgId, "member");
    guest = await createTestUser(db, orgId, "guest");
    outsider = await createTestUser(db, await createTestOrg(db, "Elsewhere"), "owner");
    runner = grpcClient(SessionRunnerService, server.internalGrpcUrl, bearer(await createTestServiceAccount(db)));
    publicGrpc = grpcClient(SessionService, server.grpcUrl);
    const computer = async (user: TestUser, name: string) => {
      const res = await rest(user, "/api/v0/computers", {
        method: "POST",
        body: { name, remoteUser: "dev", provider: "byom" },
      });
      expect(res.status).toBe(201);
      return res.json.id as string;
    };
    computerId = await computer(owner, "lifecycle-box");
    outsidersComputerId = await computer(outsider, "elsewhere-box");
  });
  afterAll(async () => {
    runner?.close();
    publicGrpc?.close();
    await server?.close();
  });

  describe("POST /api/v0/sessions", () => {
    it("creates an idle session owned by the caller: 201 with the session, status present", async () => {
      const res = await createRest(member, {
        title: "Upgrade the linter",
        computerId,
        sessionSettings: { model: "claude-sonnet", tags: [{ name: "chore" }], enabledToolIds: ["bash"] },
      });
      expect(res.status).toBe(201);
      expect(res.json).toMatchObject({
        sessionId: expect.any(String),
        status: "idle",
        messageCount: 0,
        title: "Upgrade the linter",
        computerId,
        sessionSettings: { model: "claude-sonnet", tags: [{ name: "chore" }], enabledToolIds: ["bash"] },
      });
      expect(res.json.createdAt).toBe(res.json.updatedAt);
      expect(Math.abs(res.json.createdAt - Date.now())).toBeLessThan(60_000);
      expect(res.json.completedAt).toBeUndefined();
      // The same session, read back; the member sees it listed, another member does not.
      const got = await rest(member, `/api/v0/sessions/${res.json.sessionId}`);
      expect(got.json).toEqual(res.json);
      const listed = await rest(member, "/api/v0/sessions?limit=100");
      expect(listed.json.sessions.map((s: { sessionId: string }) => s.sessionId)).toContain(res.json.sessionId);
      const others = await rest(otherMember, "/api/v0/sessions?limit=100");
      expect(others.json.sessions.map((s: { sessionId: string }) => s.sessionId)).not.toContain(res.json.sessionId);
      expect((await rest(otherMember, `/api/v0/sessions/${res.json.sessionId}`)).status).toBe(404);
      // An owner sees every session of the organization.
      expect((await rest(owner, `/api/v0/sessions/${res.json.sessionId}`)).status).toBe(200);
    });

    it("with text: the session starts with that user message and is pending; a runner gets it", async () => {
      const res = await createRest(member, { title: "With a first message", text: "Make the build green" });
      expect(res.status).toBe(201);
      expect(res.json).toMatchObject({ status: "pending", messageCount: 1 });
      const messages = await rest(member, `/api/v0/sessions/${res.json.sessionId}/messages`);
      expect(messages.json.messages).toHaveLength(1);
      expect(messages.json.messages[0].content[0].text).toBe("Make the build green");
      const message = await rest(
        member,
        `/api/v0/sessions/${res.json.sessionId}/messages/${messages.json.messages[0].id}`,
      );
      expect(message.json).toMatchObject({ role: "user", userMessageSource: "sessions_api" });
      const claimed = await claim();
      expect(claimed.session?.sessionId).toBe(res.json.sessionId);
      expect(claimed.pendingMessages.map((m) => m.content[0]?.text)).toEqual(["Make the build green"]);
      await runner.call(SessionRunnerService.method.finishRun, {
        sessionId: res.json.sessionId,
        leaseToken: claimed.leaseToken,
      });
    });

    it("an empty body creates an untitled idle session", async () => {
      const res = await rest(member, "/api/v0/sessions", { method: "POST" });
      expect(res.status).toBe(201);
      expect(res.json).toMatchObject({ status: "idle", messageCount: 0 });
      expect(res.json.title).toBeUndefined();
    });

    it("refuses bad input with a 400 naming the field, before storing anything", async () => {
      const before = (await rest(owner, "/api/v0/sessions?limit=100")).json.sessions.length;
      expectErrorBody(await createRest(member, { title: "t".repeat(501) }), 400, "title");
      expectErrorBody(await createRest(member, { computerId: outsidersComputerId }), 400, "computerId");
      expectErrorBody(await createRest(member, { computerId: "no-such-computer" }), 400, "computerId");
      expectErrorBody(await createRest(member, { text: "   " }), 400, "text");
      expectErrorBody(
        await createRest(member, { sessionSettings: { tags: [{ name: 5 }] } }),
        400,
        "sessionSettings.tags[0]",
      );
      expectErrorBody(await createRest(member, { sessionSettings: { enabledToolIds: "bash" } }), 400, "enabledToolIds");
      expectErrorBody(await createRest(member, { orgId: outsider.orgId }), 400, "orgId");
      expectErrorBody(await createRest(member, { title: 5 }), 400, "title");
      expect((await rest(owner, "/api/v0/sessions?limit=100")).json.sessions.length).toBe(before);
    });

    it("guests cannot create sessions (403); no credential is a 401", async () => {
      expectErrorBody(await createRest(guest, { title: "no" }), 403, "guest");
      expect((await rest(undefined, "/api/v0/sessions", { method: "POST", body: {} })).status).toBe(401);
    });

    it("honours Idempotency-Key: a retry returns the same session and creates nothing; another body is a 409", async () => {
      const key = { "idempotency-key": `create-${Date.now()}` };
      const first = await createRest(member, { title: "Once", text: "only once" }, key);
      expect(first.status).toBe(201);
      const again = await createRest(member, { title: "Once", text: "only once" }, key);
      expect(again.status).toBe(201);
      expect(again.json.sessionId).toBe(first.json.sessionId);
      expect(again.json.messageCount).toBe(1);
      const listed = (await rest(member, "/api/v0/sessions?limit=100")).json.sessions.filter(
        (s: { title?: string }) => s.title === "Once",
      );
      expect(listed).toHaveLength(1);
      expectErrorBody(await createRest(member, { title: "Twice", text: "only once" }, key), 409, "Idempotency-Key");
      // The same key on another kind of request is another request.
      const posted = await rest(member, `/api/v0/sessions/${first.json.sessionId}/messages`, {
        method: "POST",
        body: { text: "only once" },
        headers: key,
      });
      expectErrorBody(posted, 409, "Idempotency-Key");
      expectErrorBody(await createRest(member, {}, { "idempotency-key": "bad key" }), 400, "Idempotency-Key");
      // Drain what the runner would otherwise claim in the next tests.
      const claimed = await claim();
      expect(claimed.session?.sessionId).toBe(first.json.sessionId);
      await runner.call(SessionRunnerService.method.finishRun, {
        sessionId: first.json.sessionId,
        leaseToken: claimed.leaseToken,
      });
    });
  });

  describe("POST /api/v0/sessions/{sessionId}/interrupt", () => {
    it("a pending session no longer waits for a runner: idle, and nothing to claim", async () => {
      const created = await createRest(member, { text: "never mind" });
      expect(created.json.status).toBe("pending");
      const res = await rest(member, `/api/v0/sessions/${created.json.sessionId}/interrupt`, { method: "POST" });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ status: "idle" });
      const got = await rest(member, `/api/v0/sessions/${created.json.sessionId}`);
      expect(got.json.status).toBe("idle");
      expect(got.json.completedAt).toBeUndefined();
      expect((await claim()).session).toBeUndefined();
    });

    it("a running session's runner is refused from its next call; the next message starts a new run with it alone", async () => {
      const created = await createRest(member, { text: "first task" });
      const claimed = await claim();
      expect(claimed.session?.sessionId).toBe(created.json.sessionId);
      const res = await rest(member, `/api/v0/sessions/${created.json.sessionId}/interrupt`, {
        method: "POST",
        body: {},
      });
      expect(res.json).toEqual({ status: "idle" });
      const got = await rest(member, `/api/v0/sessions/${created.json.sessionId}`);
      expect(got.json.status).toBe("idle");
      expect(got.json.completedAt).toEqual(expect.any(Number));
      const lease = { sessionId: created.json.sessionId, leaseToken: claimed.leaseToken };
      for (const call of [
        () => runner.call(SessionRunnerService.method.renewLease, lease),
        () =>
          runner.call(SessionRunnerService.method.appendMessages, {
            ...lease,
            messages: [{ role: "assistant", content: [{ text: "too late", id: "b1" }] }],
          }),
        () => runner.call(SessionRunnerService.method.finishRun, lease),
      ]) {
        await expect(call()).rejects.toMatchObject({ code: 9, details: expect.stringContaining("interrupted") });
      }
      expect((await rest(member, `/api/v0/sessions/${created.json.sessionId}/messages`)).json.messages).toHaveLength(1);

      const posted = await rest(member, `/api/v0/sessions/${created.json.sessionId}/messages`, {
        method: "POST",
        body: { text: "second task" },
      });
      expect(posted.json.status).toBe("pending");
      const next = await claim();
      expect(next.session?.sessionId).toBe(created.json.sessionId);
      expect(next.pendingMessages.map((m) => m.content[0]?.text)).toEqual(["second task"]);
      await runner.call(SessionRunnerService.method.finishRun, {
        sessionId: created.json.sessionId,
        leaseToken: next.leaseToken,
      });
    });

    it("an idle session stays as it is", async () => {
      const created = await createRest(member, {});
      const res = await rest(member, `/api/v0/sessions/${created.json.sessionId}/interrupt`, { method: "POST" });
      expect(res.json).toEqual({ status: "idle" });
      expect((await rest(member, `/api/v0/sessions/${created.json.sessionId}`)).json).toEqual(created.json);
    });

    it("members interrupt only their own sessions (404), guests none (403), other organizations nothing (404)", async () => {
      const created = await createRest(member, { text: "mine" });
      const path = `/api/v0/sessions/${created.json.sessionId}/interrupt`;
      expectErrorBody(await rest(otherMember, path, { method: "POST" }), 404, "session");
      expectErrorBody(await rest(guest, path, { method: "POST" }), 403, "guest");
      expectErrorBody(await rest(outsider, path, { method: "POST" }), 404, "session");
      expect((await rest(member, `/api/v0/sessions/${created.json.sessionId}`)).json.status).toBe("pending");
      expect((await rest(owner, path, { method: "POST" })).json).toEqual({ status: "idle" });
    });
  });

  describe("DELETE /api/v0/sessions/{sessionId}", () => {
    it("204 with no body; then the session, its messages and its child sessions are gone; analytics keep their events", async () => {
      const created = await createRest(member, { title: "To delete", text: "hello" });
      const id = created.json.sessionId as string;
      const child = await runner.call(SessionRunnerService.method.createSession, {
        orgId: member.orgId,
        userId: member.userId,
        parentSessionId: id,
      });
      const messageId = (await rest(member, `/api/v0/sessions/${id}/messages`)).json.messages[0].id;
      const claimed = await claim();
      expect(claimed.session?.sessionId).toBe(id);

      const res = await rest(member, `/api/v0/sessions/${id}`, { method: "DELETE" });
      expect(res.status).toBe(204);
      expect(res.text).toBe("");

      expectErrorBody(await rest(member, `/api/v0/sessions/${id}`), 404, "session");
      expectErrorBody(await rest(member, `/api/v0/sessions/${child.sessionId}`), 404, "session");
      expectErrorBody(await rest(member, `/api/v0/sessions/${id}/messages`), 404, "session");
      expectErrorBody(await rest(member, `/api/v0/sessions/${id}/messages/${messageId}`), 404, "session");
      const listed = (await rest(owner, "/api/v0/sessions?limit=100")).json.sessions.map(
        (s: { sessionId: string }) => s.sessionId,
      );
      expect(listed).not.toContain(id);
      expect(listed).not.toContain(child.sessionId);
      // The runner that held it is refused.
      await expect(
        runner.call(SessionRunnerService.method.appendMessages, {
          sessionId: id,
          leaseToken: claimed.leaseToken,
          messages: [{ role: "assistant", content: [{ text: "gone", id: "b1" }] }],
        }),
      ).rejects.toMatchObject({ code: 5 });
      // Deleting again: nothing there.
      expectErrorBody(await rest(member, `/api/v0/sessions/${id}`, { method: "DELETE" }), 404, "session");
      // Usage already counted stays: the session's telemetry events are analytics' records.
      const events = await server.platform.db
        .selectFrom("analytics_events")
        .select(({ fn }) => fn.countAll<string>().as("n"))
        .where("session_id", "=", id)
        .executeTakeFirstOrThrow();
      expect(Number(events.n)).toBeGreaterThanOrEqual(2);
    });

    it("members delete only their own sessions (404), guests none (403), other organizations nothing (404)", async () => {
      const created = await createRest(member, {});
      const path = `/api/v0/sessions/${created.json.sessionId}`;
      expectErrorBody(await rest(otherMember, path, { method: "DELETE" }), 404, "session");
      expectErrorBody(await rest(guest, path, { method: "DELETE" }), 403, "guest");
      expectErrorBody(await rest(outsider, path, { method: "DELETE" }), 404, "session");
      expect((await rest(member, path)).status).toBe(200);
      expect((await rest(owner, path, { method: "DELETE" })).status).toBe(204);
    });
  });

  it("the same lifecycle over gRPC: create, post, interrupt, delete", async () => {
    const auth = bearer(member.key);
    const created = await publicGrpc.call(
      SessionService.method.createSession,
      { title: "Over gRPC", computerId, text: "start" },
      auth,
    );
    expect(created).toMatchObject({ title: "Over gRPC", computerId, status: "pending", messageCount: 1 });
    const posted = await publicGrpc.call(
      SessionService.method.postMessage,
      { sessionId: created.sessionId, text: "and this" },
      auth,
    );
    expect(posted.status).toBe("pending");
    const interrupted = await publicGrpc.call(
      SessionService.method.interruptSession,
      { sessionId: created.sessionId },
      auth,
    );
    expect(interrupted.status).toBe("idle");
    await publicGrpc.call(SessionService.method.deleteSession, { sessionId: created.sessionId }, auth);
    await expect(
      publicGrpc.call(SessionService.method.getSession, { sessionId: created.sessionId }, auth),
    ).rejects.toMatchObject({ code: 5 });
    await expect(
      publicGrpc.call(SessionService.method.createSession, { title: "x" }, bearer(guest.key)),
    ).rejects.toMatchObject({ code: 7 });
    await expect(publicGrpc.call(SessionService.method.createSession, {}, {})).rejects.toMatchObject({ code: 16 });
  });
});
