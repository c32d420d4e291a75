// Sessions and messages end to end: through the REST edge (docs/interface.md §2.8, §2.9, §4.3) and over gRPC
// with a @grpc/grpc-js client (public SessionService and internal SessionRunnerService).
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionRunnerService, SessionService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import {
  api,
  createTestOrg,
  createTestUser,
  type TestUser,
  bearer,
  createTestServiceAccount,
} from "./support/fixtures.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { startTestServer, type TestServer } from "./support/server.js";

// A real 1×1 PNG.
const PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const TOKEN_KEYS = [
  "inputTokens",
  "outputTokens",
  "cacheCreationTokens",
  "cacheReadTokens",
  "thinkingTokens",
  "factoryCredits",
];

function expectTokenUsage(value: unknown) {
  expect(Object.keys(value as object).sort()).toEqual([...TOKEN_KEYS].sort());
  for (const k of TOKEN_KEYS) expect(typeof (value as Record<string, unknown>)[k]).toBe("number");
}

function expectError(res: { status: number; json: any }, status: number, field: string) {
  expect(res.status).toBe(status);
  expect(res.json).toEqual({
    title: expect.any(String),
    detail: expect.any(String),
    status,
    requestId: expect.any(String),
  });
  expect(res.json.detail).toContain(field);
}

describe("sessions end to end", () => {
  let server: TestServer;
  let owner: TestUser;
  let member: TestUser;
  let guest: TestUser;
  let outsider: TestUser;
  let runner: GrpcCaller;
  let publicGrpc: GrpcCaller;

  beforeAll(async () => {
    server = await startTestServer();
    const db = server.platform.db;
    const orgId = await createTestOrg(db, "Sessions E2E");
    owner = await createTestUser(db, orgId, "owner");
    member = await createTestUser(db, orgId, "member");
    guest = await createTestUser(db, orgId, "guest");
    outsider = await createTestUser(db, await createTestOrg(db, "Elsewhere"), "owner");
    runner = grpcClient(
      SessionRunnerService,
      server.internalGrpcUrl,
      bearer(await createTestServiceAccount(server.platform.db)),
    );
    publicGrpc = grpcClient(SessionService, server.grpcUrl);
  });
  afterAll(async () => {
    runner?.close();
    publicGrpc?.close();
    await server?.close();
  });

  const create = (user: TestUser, init: Record<string, unknown> = {}) =>
    runner.call(SessionRunnerService.method.createSession, { orgId: user.orgId, userId: user.userId, ...init });

  it("runs a session through: post (pending) → claim (running) → reply with usage → finish (idle)", async () => {
    const box1 = await computerOf(member);
    const parent = await create(member, {
      title: "Fix the flaky test",
      computerId: box1,
      client: "web",
      autonomyMode: "auto-high",
    });
    const child = await create(member, { title: "Subagent", parentSessionId: parent.sessionId });
    expect(parent.status).toBe("idle");

    const posted = await api(server.restUrl, member.key, `/api/v0/sessions/${parent.sessionId}/messages`, {
      method: "POST",
      body: {
        text: "Why does checkout fail?",
        images: [{ data: PNG_1X1 }],
        files: [{ data: "log line", parsedData: "", name: "ci.log", path: "logs/ci.log" }],
      },
    });
    expect(posted.status).toBe(200);
    expect(posted.json).toEqual({ messageId: expect.any(String), status: "pending" });
    expect((await api(server.restUrl, member.key, `/api/v0/sessions/${parent.sessionId}`)).json.status).toBe("pending");

    const claim = await runner.call(SessionRunnerService.method.claimSession, {
      runnerId: "runner-a",
      orgId: member.orgId,
    });
    expect(claim.session?.sessionId).toBe(parent.sessionId);
    expect(claim.session?.status).toBe("running");
    expect(claim.pendingMessages.map((m) => m.id)).toEqual([posted.json.messageId]);
    expect(claim.attachments.map((a) => [a.kind, a.mediaType, a.name])).toEqual([
      ["image", "image/png", ""],
      ["file", "", "ci.log"],
    ]);
    expect((await api(server.restUrl, member.key, `/api/v0/sessions/${parent.sessionId}`)).json.status).toBe("running");

    const usage = {
      inputTokens: 1200,
      outputTokens: 300,
      cacheCreationTokens: 50,
      cacheReadTokens: 4000,
      thinkingTokens: 120,
      factoryCredits: 1700.5,
    };
    const appended = await runner.call(SessionRunnerService.method.appendMessages, {
      sessionId: parent.sessionId,
      leaseToken: claim.leaseToken,
      messages: [
        {
          role: "tool",
          content: [{ text: "$ npm test\n1 failing", id: "blk-1" }],
          visibility: "llm_only",
          isUserVisible: false,
        },
        {
          role: "assistant",
          content: [{ text: "The test races the pricing request; fixed.", id: "blk-2" }],
          parentId: posted.json.messageId,
          visibility: "both",
          openaiMessageId: "msg_1",
          openaiPhase: "final_answer",
          openaiEncryptedContent: "enc",
          openaiReasoningId: "rs_1",
          openaiReasoningSummary: "looked at the test",
          chatCompletionReasoningField: "reasoning_content",
          chatCompletionReasoningContent: "thinking...",
          isUserVisible: true,
          isError: false,
        },
      ],
      modelUsage: [{ modelId: "claude-sonnet-4-5", modelTier: "standard", usage }],
    });
    expect(appended.messageIds).toHaveLength(2);
    const finished = await runner.call(SessionRunnerService.method.finishRun, {
      sessionId: parent.sessionId,
      leaseToken: claim.leaseToken,
    });
    expect(finished.status).toBe("idle");

    // The child session's usage rolls up into the parent's inclusive usage.
    await server.platform.db
      .updateTable("sessions")
      .set({ input_tokens: 10, output_tokens: 5 })
      .where("id", "=", child.sessionId)
      .execute();

    const got = await api(server.restUrl, member.key, `/api/v0/sessions/${parent.sessionId}`);
    expect(got.status).toBe(200);
    const s = got.json;
    expect(s).toMatchObject({
      sessionId: parent.sessionId,
      status: "idle",
      messageCount: 3,
      title: "Fix the flaky test",
      computerId: box1,
    });
    expect(s.completedAt).toBe(finished.completedAt);
    expect(s.updatedAt).toBeGreaterThanOrEqual(s.createdAt);
    expect(s.sessionSettings.tokenUsage).toEqual(usage);
    expect(s.sessionSettings.childInclusiveTokenUsageBySessionId).toEqual({
      [child.sessionId]: {
        ...usage,
        inputTokens: 10,
        outputTokens: 5,
        cacheCreationTokens: 0,
        cacheReadTokens: 0,
        thinkingTokens: 0,
        factoryCredits: 0,
      },
    });
    expect(s.sessionSettings.inclusiveTokenUsage).toEqual({ ...usage, inputTokens: 1210, outputTokens: 305 });

    // Full message (get-one) and list shape.
    const reply = await api(
      server.restUrl,
      member.key,
      `/api/v0/sessions/${parent.sessionId}/messages/${appended.messageIds[1]}`,
    );
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({
      id: appended.messageIds[1],
      role: "assistant",
      content: [{ text: "The test races the pricing request; fixed.", id: "blk-2" }],
      createdAt: expect.any(Number),
      updatedAt: expect.any(Number),
      parentId: posted.json.messageId,
      visibility: "both",
      openaiMessageId: "msg_1",
      openaiPhase: "final_answer",
      openaiEncryptedContent: "enc",
      openaiReasoningId: "rs_1",
      openaiReasoningSummary: "looked at the test",
      chatCompletionReasoningField: "reasoning_content",
      chatCompletionReasoningContent: "thinking...",
      isUserVisible: true,
      isError: false,
    });
    const userMessage = await api(
      server.restUrl,
      member.key,
      `/api/v0/sessions/${parent.sessionId}/messages/${posted.json.messageId}`,
    );
    expect(userMessage.json).toMatchObject({
      role: "user",
      userMessageSource: "sessions_api",
      content: [{ text: "Why does checkout fail?", id: expect.any(String) }],
    });

    const list = await api(server.restUrl, member.key, `/api/v0/sessions/${parent.sessionId}/messages`);
    expect(list.status).toBe(200);
    expect(list.json.pagination).toEqual({ hasMore: false, nextCursor: "" });
    expect(list.json.messages.map((m: any) => m.id)).toEqual([posted.json.messageId, ...appended.messageIds]);
    const listed = list.json.messages[2];
    for (const omitted of ["role", "userMessageSource", "visibility", "openaiPhase", "chatCompletionReasoningField"])
      expect(listed).not.toHaveProperty(omitted);
    expect(listed).toMatchObject({
      id: appended.messageIds[1],
      openaiMessageId: "msg_1",
      chatCompletionReasoningContent: "thinking...",
      isUserVisible: true,
      isError: false,
      parentId: posted.json.messageId,
    });
    expect(
      (
        await api(server.restUrl, member.key, `/api/v0/sessions/${parent.sessionId}/messages?role=tool`)
      ).json.messages.map((m: any) => m.id),
    ).toEqual([appended.messageIds[0]]);
  });

  it("shows every §2.8 field with the spec's JSON name and type, and the list without status", async () => {
    const box2 = await computerOf(owner);
    const s = await create(owner, { title: "Typed", computerId: box2 });
    const patch = await api(server.restUrl, owner.key, `/api/v0/sessions/${s.sessionId}`, {
      method: "PATCH",
      body: {
        sessionSettings: {
          model: "gpt-5",
          specModeModel: "claude-opus-4-1",
          providerLockTimestamp: "2026-03-01T10:00:00Z",
          assistantActiveTimeMs: 4200,
          childInclusiveTokenUsageBySessionId: { "client-side-child": { inputTokens: 7, factoryCredits: 0.5 } },
          archivedAt: "2026-03-02T00:00:00Z",
          tags: [{ name: "infra", metadata: { ticket: "OPS-1" } }],
          enabledToolIds: ["Read", "Edit"],
          disabledToolIds: ["WebSearch"],
        },
      },
    });
    expect(patch.status).toBe(200);
    const body = patch.json;
    expect(Object.keys(body).sort()).toEqual([
      "computerId",
      "createdAt",
      "messageCount",
      "sessionId",
      "sessionSettings",
      "status",
      "title",
      "updatedAt",
    ]);
    expect(typeof body.sessionId).toBe("string");
    expect(["idle", "pending", "running"]).toContain(body.status);
    expect(Number.isInteger(body.messageCount)).toBe(true);
    for (const k of ["createdAt", "updatedAt"]) expect(typeof body[k]).toBe("number");
    const settings = body.sessionSettings;
    expect(settings).toMatchObject({
      model: "gpt-5",
      specModeModel: "claude-opus-4-1",
      providerLockTimestamp: "2026-03-01T10:00:00Z",
      assistantActiveTimeMs: 4200,
      archivedAt: "2026-03-02T00:00:00Z",
      tags: [{ name: "infra", metadata: { ticket: "OPS-1" } }],
      enabledToolIds: ["Read", "Edit"],
      disabledToolIds: ["WebSearch"],
    });
    expectTokenUsage(settings.tokenUsage);
    expectTokenUsage(settings.inclusiveTokenUsage);
    expectTokenUsage(settings.childInclusiveTokenUsageBySessionId["client-side-child"]);
    expect(settings.inclusiveTokenUsage).toMatchObject({ inputTokens: 7, factoryCredits: 0.5 });

    // Absent fields keep their value.
    const second = await api(server.restUrl, owner.key, `/api/v0/sessions/${s.sessionId}`, {
      method: "PATCH",
      body: { sessionSettings: { model: "gpt-5-mini" } },
    });
    expect(second.json.sessionSettings).toMatchObject({
      model: "gpt-5-mini",
      specModeModel: "claude-opus-4-1",
      tags: [{ name: "infra" }],
    });

    const list = await api(server.restUrl, owner.key, `/api/v0/sessions?computerId=${box2}`);
    expect(list.status).toBe(200);
    expect(list.json.sessions).toHaveLength(1);
    const item = list.json.sessions[0];
    expect(item).not.toHaveProperty("status");
    const { status: _status, ...withoutStatus } = second.json;
    expect(item).toEqual(withoutStatus);
    expect(list.json.pagination).toEqual({ hasMore: false, nextCursor: "" });
  });

  it("refuses reported child usage keyed by the session itself, its parent or an unrelated session: 400 naming the key", async () => {
    const parent = await create(member, { title: "Parent" });
    const child = await create(member, { title: "Child", parentSessionId: parent.sessionId });
    const unrelated = await create(owner, { title: "Unrelated" });
    const usage = { inputTokens: 1000 };
    const before = (await api(server.restUrl, member.key, `/api/v0/sessions/${parent.sessionId}`)).json;
    for (const id of [child.sessionId, parent.sessionId, unrelated.sessionId]) {
      const field = `sessionSettings.childInclusiveTokenUsageBySessionId.${id}`;
      const rest = await api(server.restUrl, member.key, `/api/v0/sessions/${child.sessionId}`, {
        method: "PATCH",
        body: { sessionSettings: { childInclusiveTokenUsageBySessionId: { [id]: usage } } },
      });
      expectError(rest, 400, field);
      expect(rest.json.detail.startsWith(`${field}: `)).toBe(true);
      const grpc = await publicGrpc
        .call(
          SessionService.method.updateSession,
          { sessionId: child.sessionId, sessionSettings: { childInclusiveTokenUsageBySessionId: { [id]: usage } } },
          { authorization: `Bearer ${member.key}` },
        )
        .then(
          () => undefined,
          (e: { code: number; details: string }) => e,
        );
      expect(grpc?.code).toBe(3);
      expect(decodeURIComponent(grpc!.details).startsWith(`${field}: `)).toBe(true);
    }
    // The parent's inclusive usage does not count itself (or anything) twice.
    expect((await api(server.restUrl, member.key, `/api/v0/sessions/${parent.sessionId}`)).json).toEqual(before);
    // A child the client ran itself is reported as before.
    const ok = await api(server.restUrl, member.key, `/api/v0/sessions/${child.sessionId}`, {
      method: "PATCH",
      body: { sessionSettings: { childInclusiveTokenUsageBySessionId: { "client-side-subagent": usage } } },
    });
    expect(ok.status).toBe(200);
    expect(
      (await api(server.restUrl, member.key, `/api/v0/sessions/${parent.sessionId}`)).json.sessionSettings
        .inclusiveTokenUsage.inputTokens,
    ).toBe(before.sessionSettings.inclusiveTokenUsage.inputTokens + 1000);
  });

  it("reads back the deprecated geminiThoughtSignature of old messages", async () => {
    const s = await create(member);
    const posted = await api(server.restUrl, member.key, `/api/v0/sessions/${s.sessionId}/messages`, {
      method: "POST",
      body: { text: "old" },
    });
    await server.platform.db
      .updateTable("messages")
      .set({ gemini_thought_signature: "sig" })
      .where("id", "=", posted.json.messageId)
      .execute();
    const got = await api(
      server.restUrl,
      member.key,
      `/api/v0/sessions/${s.sessionId}/messages/${posted.json.messageId}`,
    );
    expect(got.json.geminiThoughtSignature).toBe("sig");
    const listed = await api(server.restUrl, member.key, `/api/v0/sessions/${s.sessionId}/messages`);
    expect(listed.json.messages[0].geminiThoughtSignature).toBe("sig");
  });

  /** A computer of `user`'s organization, created through the API. */
  async function computerOf(user: TestUser): Promise<string> {
    const res = await api(server.restUrl, user.key, "/api/v0/computers", {
      method: "POST",
      body: { name: `box-${Math.random().toString(36).slice(2, 10)}`, remoteUser: "dev" },
    });
    expect(res.status).toBe(201);
    return res.json.id;
  }

  it("defaults a message's computer to the session's", async () => {
    const box3 = await computerOf(member);
    const s = await create(member, { computerId: box3 });
    const box4 = await computerOf(member);
    const a = await api(server.restUrl, member.key, `/api/v0/sessions/${s.sessionId}/messages`, {
      method: "POST",
      body: { text: "here" },
    });
    const b = await api(server.restUrl, member.key, `/api/v0/sessions/${s.sessionId}/messages`, {
      method: "POST",
      body: { text: "there", computerId: box4 },
    });
    expect(b.status).toBe(200);
    const onBox3 = await api(server.restUrl, member.key, `/api/v0/sessions/${s.sessionId}/messages?computerId=${box3}`);
    expect(onBox3.json.messages.map((m: any) => m.id)).toEqual([a.json.messageId]);
    expect(
      (
        await api(
          server.restUrl,
          member.key,
          `/api/v0/sessions/${s.sessionId}/messages/${b.json.messageId}?computerId=${box4}`,
        )
      ).status,
    ).toBe(200);
    expect(
      (
        await api(
          server.restUrl,
          member.key,
          `/api/v0/sessions/${s.sessionId}/messages/${b.json.messageId}?computerId=${box3}`,
        )
      ).status,
    ).toBe(404);
  });

  it("refuses a message to a computer that is not the organization's (another organization's, or none): 400 naming computerId, nothing stored", async () => {
    const theirs = await computerOf(outsider);
    const s = await create(member, { title: "Untouched by foreign computers" });
    const path = `/api/v0/sessions/${s.sessionId}/messages`;
    const before = (await api(server.restUrl, member.key, `/api/v0/sessions/${s.sessionId}`)).json;
    const auth = { authorization: `Bearer ${member.key}` };
    for (const [i, computerId] of [theirs, "no-such-computer", randomUUID()].entries()) {
      const key = `foreign-computer-${i}`;
      const rest = await api(server.restUrl, member.key, path, {
        method: "POST",
        body: { text: "run this elsewhere", computerId },
        headers: { "idempotency-key": key },
      });
      expectError(rest, 400, "computerId");
      expect(rest.json.detail).toBe(
        `computerId: no computer with ID ${JSON.stringify(computerId)} in your organization`,
      );
      const grpc = await publicGrpc
        .call(
          SessionService.method.postMessage,
          { sessionId: s.sessionId, text: "run this elsewhere", computerId },
          { ...auth, "idempotency-key": `${key}-grpc` },
        )
        .then(
          () => undefined,
          (e: { code: number; details: string }) => e,
        );
      expect(grpc?.code).toBe(3);
      expect(decodeURIComponent(grpc!.details)).toMatch(/^computerId: no computer with ID/);
    }
    // No message, no status change, no telemetry, no idempotency record.
    expect((await api(server.restUrl, member.key, `/api/v0/sessions/${s.sessionId}`)).json).toEqual(before);
    expect((await api(server.restUrl, member.key, path)).json.messages).toEqual([]);
    const db = server.platform.db;
    expect(await db.selectFrom("messages").select("id").where("session_id", "=", s.sessionId).execute()).toEqual([]);
    expect(
      await db
        .selectFrom("analytics_events")
        .select("event_id")
        .where("session_id", "=", s.sessionId)
        .where("type", "=", "message")
        .execute(),
    ).toEqual([]);
    expect(
      await db.selectFrom("idempotency_keys").select("key").where("key", "like", "foreign-computer-%").execute(),
    ).toEqual([]);
    // The organization's own computer is accepted, and the message is sent to it.
    const ours = await computerOf(member);
    const ok = await api(server.restUrl, member.key, path, {
      method: "POST",
      body: { text: "run here", computerId: ours },
    });
    expect(ok.status).toBe(200);
    expect(
      (await api(server.restUrl, member.key, `${path}?computerId=${ours}`)).json.messages.map((m: any) => m.id),
    ).toEqual([ok.json.messageId]);
  });

  it("honours Idempotency-Key: same key and body → the first result, other body → 409, nothing stored twice", async () => {
    const s = await create(member);
    const path = `/api/v0/sessions/${s.sessionId}/messages`;
    const headers = { "idempotency-key": "e2e-key-1" };
    const first = await api(server.restUrl, member.key, path, { method: "POST", body: { text: "only once" }, headers });
    const retry = await api(server.restUrl, member.key, path, { method: "POST", body: { text: "only once" }, headers });
    expect(first.status).toBe(200);
    expect(retry.json).toEqual(first.json);
    const clash = await api(server.restUrl, member.key, path, {
      method: "POST",
      body: { text: "something else" },
      headers,
    });
    expectError(clash, 409, "Idempotency-Key");
    const bad = await api(server.restUrl, member.key, path, {
      method: "POST",
      body: { text: "x" },
      headers: { "idempotency-key": "has space" },
    });
    expectError(bad, 400, "Idempotency-Key");
    expect((await api(server.restUrl, member.key, `/api/v0/sessions/${s.sessionId}`)).json.messageCount).toBe(1);
  });

  it("enforces visibility: own sessions for members and guests, 403 for guest writes, 404 across organizations", async () => {
    const guestOwn = await create(guest);
    const memberOwn = await create(member);
    const guestList = await api(server.restUrl, guest.key, "/api/v0/sessions?limit=100");
    expect(guestList.json.sessions.map((x: any) => x.sessionId)).toEqual([guestOwn.sessionId]);
    expect((await api(server.restUrl, guest.key, `/api/v0/sessions/${memberOwn.sessionId}`)).status).toBe(404);
    expectError(
      await api(server.restUrl, guest.key, `/api/v0/sessions/${guestOwn.sessionId}/messages`, {
        method: "POST",
        body: { text: "hi" },
      }),
      403,
      "guest",
    );
    expectError(
      await api(server.restUrl, guest.key, `/api/v0/sessions/${guestOwn.sessionId}`, {
        method: "PATCH",
        body: { sessionSettings: { model: "x" } },
      }),
      403,
      "guest",
    );
    expect((await api(server.restUrl, owner.key, `/api/v0/sessions/${memberOwn.sessionId}`)).status).toBe(200);
    for (const path of [
      `/api/v0/sessions/${memberOwn.sessionId}`,
      `/api/v0/sessions/${memberOwn.sessionId}/messages`,
    ]) {
      expectError(await api(server.restUrl, outsider.key, path), 404, "session");
    }
    expectError(
      await api(server.restUrl, outsider.key, `/api/v0/sessions/${memberOwn.sessionId}/messages`, {
        method: "POST",
        body: { text: "hi" },
      }),
      404,
      "session",
    );
    expect((await api(server.restUrl, outsider.key, "/api/v0/sessions")).json.sessions).toEqual([]);
  });

  it("answers bad input with a 400 naming the field, and stores nothing", async () => {
    const s = await create(member, { title: "Untouched" });
    const session = `/api/v0/sessions/${s.sessionId}`;
    const post = (body: unknown) => api(server.restUrl, member.key, `${session}/messages`, { method: "POST", body });
    const patch = (sessionSettings: unknown) =>
      api(server.restUrl, member.key, session, { method: "PATCH", body: { sessionSettings } });
    const before = (await api(server.restUrl, member.key, session)).json;

    expectError(await post({ text: "" }), 400, "text");
    expectError(await post({ text: "   \n" }), 400, "text");
    expectError(await post({}), 400, "text");
    expectError(await post({ text: 5 }), 400, "text");
    expectError(await post({ text: "hi", images: [{ data: "%%% not base64 %%%" }] }), 400, "images[0].data");
    expectError(
      await post({ text: "hi", images: [{ data: Buffer.from("plain text").toString("base64") }] }),
      400,
      "images[0].data",
    );
    expectError(await post({ text: "hi", images: "x" }), 400, "images");
    expectError(await post({ text: "hi", files: [{ name: "empty.txt" }] }), 400, "files[0]");
    expectError(await patch({ color: "blue" }), 400, "color");
    expectError(await patch({ tags: [5] }), 400, "sessionSettings.tags[0]");
    expectError(await patch({ tags: [{ name: "x", extra: 1 }] }), 400, "sessionSettings.tags[0].extra");
    expectError(await patch({ enabledToolIds: [1] }), 400, "sessionSettings.enabledToolIds[0]");
    expectError(await patch({ assistantActiveTimeMs: "soon" }), 400, "assistant");
    expect((await patch({ assistantActiveTimeMs: "soon" })).json.detail).toMatch(
      /assistant_?[aA]ctive_?[tT]ime_?[mM]s/,
    );
    expectError(
      await patch({ childInclusiveTokenUsageBySessionId: { c: { inputTokens: "1" } } }),
      400,
      "sessionSettings.childInclusiveTokenUsageBySessionId.c.inputTokens",
    );
    for (const limit of ["0", "101", "abc"]) {
      expectError(await api(server.restUrl, member.key, `/api/v0/sessions?limit=${limit}`), 400, "limit");
      expectError(await api(server.restUrl, member.key, `${session}/messages?limit=${limit}`), 400, "limit");
    }
    expectError(await api(server.restUrl, member.key, `${session}/messages?role=system`), 400, "role");
    expectError(await api(server.restUrl, member.key, "/api/v0/sessions?cursor=forged-cursor-token"), 400, "cursor");

    const after = (await api(server.restUrl, member.key, session)).json;
    expect(after).toEqual(before);
    expect((await api(server.restUrl, member.key, `${session}/messages`)).json.messages).toEqual([]);
  });

  describe("an image over 5 MiB decoded", () => {
    const oversize = () => {
      const png = Buffer.alloc(5 * 1024 * 1024 + 1);
      Buffer.from(PNG_1X1, "base64").copy(png);
      return png.toString("base64");
    };

    // Needs the edge to accept request bodies of ~27 MiB (20 MiB of attachments, base64); with a
    // smaller edge body limit the edge answers 413 before the service sees the image.
    it("is a 400 naming it through the REST edge", async () => {
      const s = await create(member);
      const res = await api(server.restUrl, member.key, `/api/v0/sessions/${s.sessionId}/messages`, {
        method: "POST",
        body: { text: "big", images: [{ data: oversize() }] },
      });
      expectError(res, 400, "images[0].data");
      expect(res.json.detail).toContain("5 MiB");
      expect((await api(server.restUrl, member.key, `/api/v0/sessions/${s.sessionId}`)).json.messageCount).toBe(0);
    });

    it("is INVALID_ARGUMENT naming it over gRPC", async () => {
      const s = await create(member);
      const call = publicGrpc.call(
        SessionService.method.postMessage,
        { sessionId: s.sessionId, text: "big", images: [{ data: oversize() }] },
        { authorization: `Bearer ${member.key}` },
      );
      const err = await call.then(
        () => undefined,
        (e: { code: number; details: string }) => e,
      );
      expect(err?.code).toBe(3);
      // grpc-js leaves the reserved characters of grpc-message percent-encoded (it uses decodeURI).
      expect(decodeURIComponent(err!.details)).toMatch(
        /^images\[0\]\.data: image is 5242881 bytes decoded; the limit is 5242880 bytes/,
      );
      expect((await api(server.restUrl, member.key, `/api/v0/sessions/${s.sessionId}`)).json.messageCount).toBe(0);
    });
  });

  it("serves the public RPCs to a @grpc/grpc-js client", async () => {
    const s = await create(member, { title: "Over gRPC" });
    const auth = { authorization: `Bearer ${member.key}` };
    const posted = await publicGrpc.call(
      SessionService.method.postMessage,
      { sessionId: s.sessionId, text: "from grpc" },
      { ...auth, "idempotency-key": "grpc-1" },
    );
    expect(posted.status).toBe("pending");
    const again = await publicGrpc.call(
      SessionService.method.postMessage,
      { sessionId: s.sessionId, text: "from grpc" },
      { ...auth, "idempotency-key": "grpc-1" },
    );
    expect(again.messageId).toBe(posted.messageId);
    const got = await publicGrpc.call(SessionService.method.getSession, { sessionId: s.sessionId }, auth);
    expect(got).toMatchObject({ sessionId: s.sessionId, status: "pending", messageCount: 1, title: "Over gRPC" });
    const listed = await publicGrpc.call(SessionService.method.listSessions, { limit: "100" }, auth);
    expect(listed.sessions.map((x) => x.sessionId)).toContain(s.sessionId);
    const messages = await publicGrpc.call(SessionService.method.listMessages, { sessionId: s.sessionId }, auth);
    expect(messages.messages.map((m) => m.id)).toEqual([posted.messageId]);
    const message = await publicGrpc.call(
      SessionService.method.getMessage,
      { sessionId: s.sessionId, messageId: posted.messageId },
      auth,
    );
    expect(message.role).toBe("user");
    const updated = await publicGrpc.call(
      SessionService.method.updateSession,
      { sessionId: s.sessionId, sessionSettings: { model: "m" } },
      auth,
    );
    expect(updated.sessionSettings?.model).toBe("m");
    await expect(
      publicGrpc.call(SessionService.method.getSession, { sessionId: s.sessionId }, {}),
    ).rejects.toMatchObject({ code: 16 });
  });

  it("records session_start and message events in analytics' raw events, in the same transaction", async () => {
    // An organization of its own, so the claim below finds this session and no other.
    const member = await createTestUser(
      server.platform.db,
      await createTestOrg(server.platform.db, "Telemetry"),
      "member",
    );
    const s = await create(member, { client: "terminal-ui", autonomyMode: "spec" });
    await api(server.restUrl, member.key, `/api/v0/sessions/${s.sessionId}/messages`, {
      method: "POST",
      body: { text: "count me" },
    });
    const claim = await runner.call(SessionRunnerService.method.claimSession, {
      runnerId: "telemetry",
      orgId: member.orgId,
    });
    expect(claim.session?.sessionId).toBe(s.sessionId);
    await runner.call(SessionRunnerService.method.appendMessages, {
      sessionId: s.sessionId,
      leaseToken: claim.leaseToken,
      messages: [
        { role: "assistant", content: [{ text: "counted", id: "" }] },
        { role: "tool", content: [{ text: "not an event", id: "" }] },
      ],
      modelUsage: [
        {
          modelId: "gpt-5",
          modelTier: "thinking",
          usage: { inputTokens: 10, outputTokens: 2, cacheCreationTokens: 1, cacheReadTokens: 3 },
        },
      ],
    });
    await runner.call(SessionRunnerService.method.finishRun, { sessionId: s.sessionId, leaseToken: claim.leaseToken });
    const events = await server.platform.db
      .selectFrom("analytics_events")
      .select([
        "type",
        "role",
        "user_id",
        "client",
        "autonomy",
        "model_id",
        "input_tokens",
        "cache_write_tokens",
        "event_id",
      ])
      .where("session_id", "=", s.sessionId)
      .orderBy("occurred_at")
      .orderBy("type", "desc")
      .execute();
    // The tool message is stored but is no `message` event (docs/telemetry.md: only user and
    // assistant messages are).
    expect(events.map((e) => `${e.type}:${e.role ?? ""}`).sort()).toEqual([
      "message:assistant",
      "message:user",
      "model_usage:",
      "session_start:",
    ]);
    expect(new Set(events.map((e) => e.event_id)).size).toBe(4);
    expect(events.every((e) => e.user_id === member.userId && e.client === "terminal-ui")).toBe(true);
    expect(events.find((e) => e.type === "session_start")?.autonomy).toBe("spec");
    expect(events.find((e) => e.type === "model_usage")).toMatchObject({
      model_id: "gpt-5",
      input_tokens: 10,
      cache_write_tokens: 1,
    });
    // A rejected request leaves no event behind.
    await api(server.restUrl, member.key, `/api/v0/sessions/${s.sessionId}/messages`, {
      method: "POST",
      body: { text: "" },
    });
    const count = await server.platform.db
      .selectFrom("analytics_events")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("session_id", "=", s.sessionId)
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(4);
  });
});
