// SessionService and SessionRunnerService through an in-memory router transport, over a real
// test database, the real telemetry sink and the real cursor store; and the demo writer.
import { Code, createClient, type Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionServiceDeps } from "../../test/support/session-deps.js";
import { handlerTransport, rejection } from "../../test/support/handlers.js";
import { SessionRunnerService, SessionService } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import { insertComputer } from "../computers/queries.js";
import { planSteps } from "../computers/steps.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { createOrganization, createUser } from "../organization/queries.js";
import type { Role } from "../platform/context.js";
import { createSessionService } from "./handlers.js";
import { writeSessionsDemo } from "./demo.js";
import { IDEMPOTENCY_KEY_TTL_MS, pruneIdempotencyKeys } from "./idempotency-queries.js";
import { createSessionRunnerService } from "./runner-handlers.js";
import { treeOf } from "./tree-queries.js";
import { usageOf } from "./views.js";

interface Caller {
  userId: string;
  api: Client<typeof SessionService>;
}

describe("session handlers", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  let otherOrg: string;
  let owner: Caller;
  let member: Caller;
  let otherMember: Caller;
  let guest: Caller;
  let stranger: Caller;
  let runner: Client<typeof SessionRunnerService>;
  let caller: (org: string, role: Role) => Promise<Caller>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    const db = database.db;
    const deps = sessionServiceDeps(db);
    caller = async (org: string, role: Role): Promise<Caller> => {
      const user = await createUser(db, {
        orgId: org,
        email: `${role}-${Math.random().toString(36).slice(2)}@example.test`,
        role,
      });
      const transport = handlerTransport((router) => router.service(SessionService, createSessionService(deps)), {
        orgId: org,
        userId: user.id,
        role,
      });
      return { userId: user.id, api: createClient(SessionService, transport) };
    };
    orgId = (await createOrganization(db, { name: "Sessions A" })).id;
    otherOrg = (await createOrganization(db, { name: "Sessions B" })).id;
    owner = await caller(orgId, "owner");
    member = await caller(orgId, "member");
    otherMember = await caller(orgId, "member");
    guest = await caller(orgId, "guest");
    stranger = await caller(otherOrg, "owner");
    runner = createClient(
      SessionRunnerService,
      handlerTransport((router) => router.service(SessionRunnerService, createSessionRunnerService(deps))),
    );
  });
  afterAll(() => database?.drop());

  /** A computer of the organization (sessions may name only their own organization's). */
  async function computerIn(org: string, name: string): Promise<string> {
    const input = {
      name,
      provider: "byom" as const,
      hostId: null,
      remoteUser: "dev",
      repos: [],
      autoInstallDeps: false,
    };
    const inserted = await database.db
      .transaction()
      .execute((trx) => insertComputer(trx, org, input, planSteps("byom", [], false)));
    return inserted.computer.id;
  }

  const newSession = (
    userId: string,
    extra: { title?: string; parentSessionId?: string; computerId?: string; orgId?: string } = {},
  ) => runner.createSession({ orgId, userId, title: "t", ...extra });

  /** An organization of its own with one member, so runner claims see only what the test queues. */
  async function freshOrg(): Promise<{ orgId: string; member: Caller }> {
    const id = (await createOrganization(database.db, { name: `Runner ${Math.random()}` })).id;
    return { orgId: id, member: await caller(id, "member") };
  }

  describe("visibility and roles", () => {
    it("shows members and guests only their own sessions, owners everything; other organizations get 404", async () => {
      const mine = await newSession(member.userId);
      const theirs = await newSession(otherMember.userId);
      const ids = async (c: Caller) => (await c.api.listSessions({ limit: "100" })).sessions.map((s) => s.sessionId);
      expect(await ids(member)).toContain(mine.sessionId);
      expect(await ids(member)).not.toContain(theirs.sessionId);
      expect(await ids(owner)).toEqual(expect.arrayContaining([mine.sessionId, theirs.sessionId]));
      expect((await rejection(member.api.getSession({ sessionId: theirs.sessionId }))).code).toBe(Code.NotFound);
      expect((await rejection(stranger.api.getSession({ sessionId: mine.sessionId }))).code).toBe(Code.NotFound);
      expect((await rejection(stranger.api.listMessages({ sessionId: mine.sessionId }))).code).toBe(Code.NotFound);
      expect((await rejection(stranger.api.postMessage({ sessionId: mine.sessionId, text: "hi" }))).code).toBe(
        Code.NotFound,
      );
      await expect(owner.api.getSession({ sessionId: mine.sessionId })).resolves.toMatchObject({
        sessionId: mine.sessionId,
        status: "idle",
      });
    });

    it("refuses PATCH and POST to guests, even on their own session", async () => {
      const own = await newSession(guest.userId);
      await expect(guest.api.getSession({ sessionId: own.sessionId })).resolves.toMatchObject({
        sessionId: own.sessionId,
      });
      const patch = await rejection(
        guest.api.updateSession({ sessionId: own.sessionId, sessionSettings: { model: "x" } }),
      );
      expect(patch.code).toBe(Code.PermissionDenied);
      const post = await rejection(guest.api.postMessage({ sessionId: own.sessionId, text: "hi" }));
      expect(post.code).toBe(Code.PermissionDenied);
      expect((await owner.api.getSession({ sessionId: own.sessionId })).messageCount).toBe(0);
    });

    it("answers 404 for a message of a session the caller cannot see, or on another computer", async () => {
      const box1 = await computerIn(orgId, "box-1");
      const s = await newSession(member.userId, { computerId: box1 });
      const { messageId } = await member.api.postMessage({ sessionId: s.sessionId, text: "hello" });
      await expect(
        member.api.getMessage({ sessionId: s.sessionId, messageId, computerId: box1 }),
      ).resolves.toMatchObject({ id: messageId, role: "user" });
      expect(
        (await rejection(member.api.getMessage({ sessionId: s.sessionId, messageId, computerId: "box-2" }))).code,
      ).toBe(Code.NotFound);
      expect((await rejection(member.api.getSession({ sessionId: s.sessionId, computerId: "box-2" }))).code).toBe(
        Code.NotFound,
      );
      expect((await rejection(otherMember.api.getMessage({ sessionId: s.sessionId, messageId }))).code).toBe(
        Code.NotFound,
      );
      expect((await rejection(stranger.api.getMessage({ sessionId: s.sessionId, messageId }))).code).toBe(
        Code.NotFound,
      );
    });
  });

  describe("PATCH sessionSettings", () => {
    it("replaces present fields, keeps absent ones, and moves updatedAt", async () => {
      const s = await runner.createSession({
        orgId,
        userId: member.userId,
        sessionSettings: { model: "a", specModeModel: "s" },
      });
      const patched = await member.api.updateSession({
        sessionId: s.sessionId,
        sessionSettings: { model: "b", enabledToolIds: { values: [{ kind: { case: "stringValue", value: "Read" } }] } },
      });
      expect(patched.sessionSettings).toMatchObject({
        model: "b",
        specModeModel: "s",
        enabledToolIds: ["Read"],
        disabledToolIds: [],
        tags: [],
      });
      expect(patched.updatedAt).toBeGreaterThanOrEqual(s.updatedAt);
      const again = await member.api.updateSession({
        sessionId: s.sessionId,
        sessionSettings: { enabledToolIds: { values: [] } },
      });
      expect(again.sessionSettings).toMatchObject({ model: "b", enabledToolIds: [] });
    });

    it("refuses to overwrite the usage of a child session it tracks", async () => {
      const parent = await newSession(member.userId);
      const child = await newSession(member.userId, { parentSessionId: parent.sessionId });
      const err = await rejection(
        member.api.updateSession({
          sessionId: parent.sessionId,
          sessionSettings: { childInclusiveTokenUsageBySessionId: { [child.sessionId]: { inputTokens: 5 } } },
        }),
      );
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toBe(
        `sessionSettings.childInclusiveTokenUsageBySessionId.${child.sessionId}: is a child session this service tracks; its usage cannot be reported`,
      );
    });

    it("accepts reported children only for IDs that are no session of the organization", async () => {
      // root ── parent ─┬─ self ── child
      //                 └─ sibling          unrelated (another tree), theirs (another organization)
      const root = await newSession(member.userId);
      const parent = await newSession(member.userId, { parentSessionId: root.sessionId });
      const self = await newSession(member.userId, { parentSessionId: parent.sessionId });
      const child = await newSession(member.userId, { parentSessionId: self.sessionId });
      const sibling = await newSession(member.userId, { parentSessionId: parent.sessionId });
      const unrelated = await newSession(otherMember.userId);
      const elsewhere = await freshOrg();
      const theirs = await newSession(elsewhere.member.userId, { orgId: elsewhere.orgId });
      const report = (id: string) => ({
        sessionId: self.sessionId,
        sessionSettings: {
          childInclusiveTokenUsageBySessionId: { "client-child": { inputTokens: 1 }, [id]: { inputTokens: 5 } },
        },
      });
      const key = (id: string) => `sessionSettings.childInclusiveTokenUsageBySessionId.${id}`;
      const cases: [string, string][] = [
        [self.sessionId, "is this session's own ID"],
        [child.sessionId, "is a child session this service tracks"],
        [parent.sessionId, "is a session this service holds and not a child of this one"],
        [root.sessionId, "is a session this service holds and not a child of this one"],
        [sibling.sessionId, "is a session this service holds and not a child of this one"],
        [unrelated.sessionId, "is a session this service holds and not a child of this one"],
      ];
      for (const [id, problem] of cases) {
        const err = await rejection(member.api.updateSession(report(id)));
        expect(err.code, id).toBe(Code.InvalidArgument);
        expect(err.rawMessage).toMatch(new RegExp(`^${key(id).replace(/[.]/g, "\\.")}: ${problem}`));
      }
      // Nothing was stored, and no inclusive usage counts a session twice.
      const before = await owner.api.getSession({ sessionId: root.sessionId });
      expect(
        Object.keys(
          (await owner.api.getSession({ sessionId: self.sessionId })).sessionSettings!
            .childInclusiveTokenUsageBySessionId,
        ),
      ).toEqual([child.sessionId]);
      // A client-side child, and another organization's session ID (the service cannot tell them apart), are kept.
      const ok = await member.api.updateSession(report(theirs.sessionId));
      expect(Object.keys(ok.sessionSettings!.childInclusiveTokenUsageBySessionId).sort()).toEqual(
        [child.sessionId, "client-child", theirs.sessionId].sort(),
      );
      const after = await owner.api.getSession({ sessionId: root.sessionId });
      expect(after.sessionSettings!.inclusiveTokenUsage!.inputTokens).toBe(
        before.sessionSettings!.inclusiveTokenUsage!.inputTokens + 6,
      );
      // CreateSession (the runner's) keeps to the same rule.
      const created = await rejection(
        runner.createSession({
          orgId,
          userId: member.userId,
          parentSessionId: parent.sessionId,
          sessionSettings: {
            childInclusiveTokenUsageBySessionId: report(parent.sessionId).sessionSettings
              .childInclusiveTokenUsageBySessionId,
          },
        }),
      );
      expect(created.rawMessage).toMatch(
        /^sessionSettings\.childInclusiveTokenUsageBySessionId\.[\w-]+: is a session this service holds/,
      );
    });
  });

  describe("posting and running", () => {
    it("queues a user message (idle → pending), runs it and returns to idle with consistent usage", async () => {
      const { orgId, member } = await freshOrg();
      const parent = await newSession(member.userId, { orgId });
      const child = await newSession(member.userId, { orgId, parentSessionId: parent.sessionId });
      const posted = await member.api.postMessage({ sessionId: parent.sessionId, text: "fix the test" });
      expect(posted.status).toBe("pending");
      // Posting again while pending leaves it pending.
      expect((await member.api.postMessage({ sessionId: parent.sessionId, text: "and the lint" })).status).toBe(
        "pending",
      );

      const claim = await runner.claimSession({ runnerId: "r1", orgId });
      expect(claim.session?.sessionId).toBe(parent.sessionId);
      expect(claim.session?.status).toBe("running");
      expect(claim.pendingMessages.map((m) => m.content[0]?.text)).toEqual(["fix the test", "and the lint"]);
      expect((await member.api.postMessage({ sessionId: parent.sessionId, text: "also docs" })).status).toBe("running");

      const usage = {
        inputTokens: 100,
        outputTokens: 20,
        cacheCreationTokens: 3,
        cacheReadTokens: 40,
        thinkingTokens: 5,
        factoryCredits: 1.25,
      };
      const appended = await runner.appendMessages({
        sessionId: parent.sessionId,
        leaseToken: claim.leaseToken,
        messages: [
          { role: "assistant", content: [{ text: "done", id: "" }], visibility: "both", openaiPhase: "final_answer" },
        ],
        modelUsage: [{ modelId: "m", modelTier: "standard", usage }],
      });
      expect(appended.messageIds).toHaveLength(1);
      // The child runs too: its usage is part of the parent's inclusive usage.
      await member.api.postMessage({ sessionId: child.sessionId, text: "explore" });
      const childClaim = await runner.claimSession({ runnerId: "r2", orgId });
      expect(childClaim.session?.sessionId).toBe(child.sessionId);
      await runner.appendMessages({
        sessionId: child.sessionId,
        leaseToken: childClaim.leaseToken,
        modelUsage: [{ modelId: "m", modelTier: "thinking", usage: { ...usage, factoryCredits: 0.5 } }],
      });
      await runner.finishRun({ sessionId: child.sessionId, leaseToken: childClaim.leaseToken });

      // A message arrived during the run: finishing makes the session pending again.
      const finished = await runner.finishRun({ sessionId: parent.sessionId, leaseToken: claim.leaseToken });
      expect(finished.status).toBe("pending");
      expect(finished.completedAt).toBeGreaterThan(0);
      const second = await runner.claimSession({ runnerId: "r1", orgId });
      expect(second.pendingMessages.map((m) => m.content[0]?.text)).toEqual(["also docs"]);
      const done = await runner.finishRun({ sessionId: parent.sessionId, leaseToken: second.leaseToken });
      expect(done.status).toBe("idle");

      const got = await member.api.getSession({ sessionId: parent.sessionId });
      expect(got.messageCount).toBe(4);
      expect(got.status).toBe("idle");
      expect(got.completedAt).toBe(done.completedAt);
      const settings = got.sessionSettings!;
      expect(settings.tokenUsage).toMatchObject(usage);
      expect(settings.childInclusiveTokenUsageBySessionId[child.sessionId]).toMatchObject({
        ...usage,
        factoryCredits: 0.5,
      });
      expect(settings.inclusiveTokenUsage).toMatchObject({
        inputTokens: 200,
        outputTokens: 40,
        cacheCreationTokens: 6,
        cacheReadTokens: 80,
        thinkingTokens: 10,
        factoryCredits: 1.75,
      });

      // The old lease is gone.
      const stale = await rejection(
        runner.appendMessages({
          sessionId: parent.sessionId,
          leaseToken: claim.leaseToken,
          messages: [{ role: "assistant", content: [{ text: "late", id: "" }] }],
        }),
      );
      expect(stale.code).toBe(Code.FailedPrecondition);
      expect(stale.rawMessage).toMatch(/^leaseToken: /);

      // Telemetry: session_start for both, one message event per user/assistant message.
      const events = await database.db
        .selectFrom("analytics_events")
        .select(["type", "role", "user_id"])
        .where("session_id", "=", parent.sessionId)
        .execute();
      expect(events.filter((e) => e.type === "session_start")).toHaveLength(1);
      expect(events.filter((e) => e.type === "message" && e.role === "user")).toHaveLength(3);
      expect(events.filter((e) => e.type === "message" && e.role === "assistant")).toHaveLength(1);
      expect(events.filter((e) => e.type === "model_usage")).toHaveLength(1);
    });

    it("gives each pending session to one runner when many claim at once", async () => {
      const { orgId, member } = await freshOrg();
      const sessions = await Promise.all(Array.from({ length: 6 }, () => newSession(member.userId, { orgId })));
      for (const s of sessions) await member.api.postMessage({ sessionId: s.sessionId, text: "go" });
      const claims = await Promise.all(
        Array.from({ length: 10 }, (_, i) => runner.claimSession({ runnerId: `r${i}`, orgId })),
      );
      const won = claims.map((c) => c.session?.sessionId).filter((id): id is string => id !== undefined);
      expect(won).toHaveLength(6);
      expect(new Set(won).size).toBe(6);
      expect(new Set(won)).toEqual(new Set(sessions.map((s) => s.sessionId)));
      for (const c of claims)
        if (c.session) await runner.finishRun({ sessionId: c.session.sessionId, leaseToken: c.leaseToken });
    });

    it("makes a session whose lease expired claimable again, with the unanswered messages", async () => {
      const { orgId, member } = await freshOrg();
      const s = await newSession(member.userId, { orgId });
      await member.api.postMessage({ sessionId: s.sessionId, text: "hello?" });
      const first = await runner.claimSession({ runnerId: "dies", orgId, leaseSeconds: 5 });
      expect(first.session?.sessionId).toBe(s.sessionId);
      expect((await runner.claimSession({ runnerId: "other", orgId })).session).toBeUndefined();
      // The runner died: move its lease expiry into the past rather than waiting for it.
      await database.db
        .updateTable("sessions")
        .set({ lease_expires_at: new Date(Date.now() - 1000) })
        .where("id", "=", s.sessionId)
        .execute();
      expect((await member.api.getSession({ sessionId: s.sessionId })).status).toBe("pending");
      const second = await runner.claimSession({ runnerId: "other", orgId });
      expect(second.session?.sessionId).toBe(s.sessionId);
      expect(second.leaseToken).not.toBe(first.leaseToken);
      expect(second.pendingMessages.map((m) => m.content[0]?.text)).toEqual(["hello?"]);
      expect((await rejection(runner.renewLease({ sessionId: s.sessionId, leaseToken: first.leaseToken }))).code).toBe(
        Code.FailedPrecondition,
      );
      const renewed = await runner.renewLease({
        sessionId: s.sessionId,
        leaseToken: second.leaseToken,
        leaseSeconds: 120,
      });
      expect(renewed.leaseExpiresAt).toBeGreaterThan(Date.now() + 100_000);
      await runner.finishRun({ sessionId: s.sessionId, leaseToken: second.leaseToken });
    });

    it("refuses token counts past what telemetry stores, naming the field, and records nothing", async () => {
      // Found by the RPC fuzzer: counts were checked to be whole numbers only, so 1e16 passed
      // and the telemetry sink refused the event with a plain Error: INTERNAL.
      const { orgId, member } = await freshOrg();
      const s = await newSession(member.userId, { orgId });
      await member.api.postMessage({ sessionId: s.sessionId, text: "count" });
      const claim = await runner.claimSession({ runnerId: "r", orgId });
      for (const [key, value] of [
        ["cacheReadTokens", 1e16],
        ["inputTokens", 1e308],
        ["thinkingTokens", 2 ** 53],
        ["factoryCredits", 1e300],
      ] as const) {
        const err = await rejection(
          runner.appendMessages({
            sessionId: s.sessionId,
            leaseToken: claim.leaseToken,
            modelUsage: [{ modelId: "m", modelTier: "standard", usage: { [key]: value } }],
          }),
        );
        expect(err.code, key).toBe(Code.InvalidArgument);
        expect(err.rawMessage).toMatch(
          new RegExp(`^modelUsage\\[0\\]\\.usage\\.${key}: must be .* from 0 to 1000000000000000, got `),
        );
      }
      const stored = await runner.appendMessages({
        sessionId: s.sessionId,
        leaseToken: claim.leaseToken,
        modelUsage: [{ modelId: "m", modelTier: "standard", usage: { cacheReadTokens: 1e15, factoryCredits: 0.5 } }],
      });
      expect(stored.messageIds).toEqual([]);
      const after = await member.api.getSession({ sessionId: s.sessionId });
      expect(after.sessionSettings?.tokenUsage?.cacheReadTokens).toBe(1e15);
      expect(after.sessionSettings?.tokenUsage?.inputTokens).toBe(0);
      await runner.finishRun({ sessionId: s.sessionId, leaseToken: claim.leaseToken });
    });

    it("validates runner input and names the field", async () => {
      const bad = async (p: Promise<unknown>, field: RegExp) => {
        const err = await rejection(p);
        expect(err.code).toBe(Code.InvalidArgument);
        expect(err.rawMessage).toMatch(field);
      };
      await bad(runner.createSession({ orgId, userId: "nobody" }), /^userId: /);
      await bad(runner.createSession({ orgId: "no-org", userId: member.userId }), /^orgId: /);
      await bad(runner.createSession({ orgId, userId: member.userId, client: "tv" }), /^client: must be one of/);
      await bad(
        runner.createSession({ orgId, userId: member.userId, parentSessionId: "missing" }),
        /^parentSessionId: /,
      );
      // A computer that does not exist, and one of another organization, get the same answer.
      await bad(runner.createSession({ orgId, userId: member.userId, computerId: "no-such-box" }), /^computerId: /);
      await bad(
        runner.createSession({ orgId, userId: member.userId, computerId: await computerIn(otherOrg, "theirs") }),
        /^computerId: no computer with ID/,
      );
      await bad(runner.claimSession({ runnerId: "r", leaseSeconds: 1 }), /^leaseSeconds: /);
      await bad(runner.claimSession({ runnerId: "" }), /^runnerId: /);
      await bad(
        runner.appendMessages({ sessionId: "s", leaseToken: "t", messages: [{ role: "user" }] }),
        /^messages\[0\]\.role: /,
      );
      await bad(
        runner.appendMessages({
          sessionId: "s",
          leaseToken: "t",
          modelUsage: [{ modelId: "m", modelTier: "standard", usage: { inputTokens: 1.5 } }],
        }),
        /^modelUsage\[0\]\.usage\.inputTokens: /,
      );
    });
  });

  describe("Idempotency-Key", () => {
    it("returns the first result for a retry, 409 for another body, and stores one message under concurrent retries", async () => {
      const s = await newSession(member.userId);
      const headers = { "idempotency-key": "retry-1" };
      const first = await member.api.postMessage({ sessionId: s.sessionId, text: "once" }, { headers });
      const again = await member.api.postMessage({ sessionId: s.sessionId, text: "once" }, { headers });
      expect(again).toEqual(first);
      const other = await rejection(member.api.postMessage({ sessionId: s.sessionId, text: "different" }, { headers }));
      expect(other.code).toBe(Code.Aborted);
      expect(other.rawMessage).toMatch(/^Idempotency-Key: /);

      const parallel = await Promise.all(
        Array.from({ length: 5 }, () =>
          member.api.postMessage(
            { sessionId: s.sessionId, text: "burst" },
            { headers: { "idempotency-key": "burst-1" } },
          ),
        ),
      );
      expect(new Set(parallel.map((r) => r.messageId)).size).toBe(1);
      const got = await member.api.getSession({ sessionId: s.sessionId });
      expect(got.messageCount).toBe(2);
      // Keys are per credential: another caller's identical key is its own.
      const ownerPost = await owner.api.postMessage({ sessionId: s.sessionId, text: "once" }, { headers });
      expect(ownerPost.messageId).not.toBe(first.messageId);
    });

    it("lets an expired key be used again, and prunes expired keys", async () => {
      const s = await newSession(member.userId);
      const headers = { "idempotency-key": "old-key" };
      const first = await member.api.postMessage({ sessionId: s.sessionId, text: "a" }, { headers });
      const expire = () =>
        database.db
          .updateTable("idempotency_keys")
          .set({ created_at: new Date(Date.now() - IDEMPOTENCY_KEY_TTL_MS - 1000) })
          .where("key", "=", "old-key")
          .execute();
      await expire();
      // Expired: another body is no conflict, and it is a new message.
      const second = await member.api.postMessage({ sessionId: s.sessionId, text: "b" }, { headers });
      expect(second.messageId).not.toBe(first.messageId);
      await expire();
      expect(await pruneIdempotencyKeys(database.db)).toBeGreaterThanOrEqual(1);
      expect(
        await database.db.selectFrom("idempotency_keys").select("key").where("key", "=", "old-key").execute(),
      ).toEqual([]);
    });
  });

  describe("ordering", () => {
    it("pages sessions over a snapshot: an update mid-listing neither repeats nor drops a session", async () => {
      const c = await caller2();
      const created = [];
      for (let i = 0; i < 5; i++) created.push(await runner.createSession({ orgId, userId: c.userId, title: `s${i}` }));
      const expected = [...created].reverse().map((s) => s.sessionId);
      const page1 = await c.api.listSessions({ limit: "2" });
      expect(page1.sessions.map((s) => s.sessionId)).toEqual(expected.slice(0, 2));
      // The oldest session gets a message (it jumps to the top) and a new session appears.
      await c.api.postMessage({ sessionId: created[0]!.sessionId, text: "bump" });
      const late = await runner.createSession({ orgId, userId: c.userId, title: "late" });
      const page2 = await c.api.listSessions({ limit: "2", cursor: page1.pagination!.nextCursor });
      const page3 = await c.api.listSessions({ limit: "2", cursor: page2.pagination!.nextCursor });
      const seen = [...page1.sessions, ...page2.sessions, ...page3.sessions];
      expect(seen.map((s) => s.sessionId)).toEqual(expected);
      expect(page3.pagination).toMatchObject({ hasMore: false, nextCursor: "" });
      // The bumped session shows its current fields at its snapshot place.
      expect(seen.at(-1)!.messageCount).toBe(1);
      // A fresh listing shows the new order.
      const fresh = await c.api.listSessions({ limit: "100" });
      expect(fresh.sessions.map((s) => s.sessionId).slice(0, 2)).toEqual([late.sessionId, created[0]!.sessionId]);
    });

    it("lists messages oldest first with role and computer filters, and a cursor bound to them", async () => {
      const { orgId, member } = await freshOrg();
      const s = await newSession(member.userId, { orgId, computerId: await computerIn(orgId, "box-9") });
      const box10 = await computerIn(orgId, "box-10");
      await member.api.postMessage({ sessionId: s.sessionId, text: "one" });
      await member.api.postMessage({ sessionId: s.sessionId, text: "two", computerId: box10 });
      const claim = await runner.claimSession({ runnerId: "r", orgId });
      expect(claim.session?.sessionId).toBe(s.sessionId);
      await runner.appendMessages({
        sessionId: s.sessionId,
        leaseToken: claim.leaseToken,
        messages: [
          { role: "tool", content: [{ text: "ls", id: "b1" }] },
          { role: "assistant", content: [{ text: "three", id: "" }] },
        ],
      });
      await runner.finishRun({ sessionId: s.sessionId, leaseToken: claim.leaseToken });
      const all = await member.api.listMessages({ sessionId: s.sessionId });
      expect(all.messages.map((m) => m.content[0]?.text)).toEqual(["one", "two", "ls", "three"]);
      const created = all.messages.map((m) => m.createdAt);
      expect([...created].sort((a, b) => a - b)).toEqual(created);
      expect(
        (await member.api.listMessages({ sessionId: s.sessionId, role: "tool" })).messages.map((m) => m.content[0]?.id),
      ).toEqual(["b1"]);
      expect(
        (await member.api.listMessages({ sessionId: s.sessionId, computerId: box10 })).messages.map(
          (m) => m.content[0]?.text,
        ),
      ).toEqual(["two"]);
      const first = await member.api.listMessages({ sessionId: s.sessionId, limit: "1", role: "user" });
      const wrongFilter = await rejection(
        member.api.listMessages({ sessionId: s.sessionId, limit: "1", cursor: first.pagination!.nextCursor }),
      );
      expect(wrongFilter.rawMessage).toMatch(/^cursor: /);
      const err = await rejection(member.api.listMessages({ sessionId: s.sessionId, role: "system" }));
      expect(err.rawMessage).toBe('role: must be one of user, assistant, tool, got "system"');
    });
  });

  describe("demo", () => {
    it("writes sessions with message histories once", async () => {
      const orgId = (await createOrganization(database.db, { name: "Demo" })).id;
      // They joined before the demo period: nobody works before joining.
      const createdAt = new Date(Date.now() - 60 * 86_400_000);
      for (const role of ["owner", "member", "guest"] as const)
        await createUser(database.db, { orgId, email: `${role}@demo.test`, role, createdAt });
      await writeSessionsDemo(database.db, orgId, { days: 14, users: 0 });
      const db = database.db;
      const sessions = await db.selectFrom("sessions").selectAll().where("org_id", "=", orgId).execute();
      const top = sessions.filter((s) => s.parent_session_id === null);
      // Owner and member get sessions; the guest none.
      expect(new Set(top.map((s) => s.user_id)).size).toBe(2);
      expect(top.length).toBeGreaterThanOrEqual(4);
      expect(sessions.filter((s) => s.status === "pending")).toHaveLength(1);
      for (const s of sessions) {
        const messages = await db
          .selectFrom("messages")
          .select(["seq", "role", "created_at"])
          .where("session_id", "=", s.id)
          .orderBy("seq")
          .execute();
        expect(messages.map((m) => m.seq)).toEqual(messages.map((_, i) => i + 1));
        expect(s.message_count).toBe(messages.length);
        expect(messages[0]?.role).toBe("user");
        expect(s.updated_at.getTime()).toBeGreaterThanOrEqual(messages.at(-1)!.created_at.getTime());
        expect(s.updated_at.getTime()).toBeLessThan(Date.now());
        if (s.status === "idle") expect(s.completed_at).not.toBeNull();
      }
      for (const s of top) {
        const u = usageOf(s, await treeOf(db, s));
        expect(u.own.inputTokens).toBeGreaterThanOrEqual(0);
        const childSum = Object.values(u.children).reduce((n, c) => n + c.inputTokens, 0);
        expect(u.inclusive.inputTokens).toBe(u.own.inputTokens + childSum);
      }
      await writeSessionsDemo(database.db, orgId, { days: 14, users: 0 });
      const again = await db.selectFrom("sessions").select("id").where("org_id", "=", orgId).execute();
      expect(again).toHaveLength(sessions.length);
    });
  });

  // A member with no sessions yet, so a listing holds only what the test creates.
  const caller2 = () => caller(orgId, "member");
});
