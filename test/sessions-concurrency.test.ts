// Concurrency end to end: paging GET /sessions and GET /sessions/{id}/messages with limit=1..3
// while messages are being posted (and sessions created) concurrently, each item exactly once in
// the documented order; and agent runners over @grpc/grpc-js, where concurrent claims never share
// a session and a lease that really expires makes the session claimable again.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionRunnerService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
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

describe("sessions under concurrency", () => {
  let server: TestServer;
  let owner: TestUser;
  let runner: GrpcCaller;
  let runnerB: GrpcCaller;

  beforeAll(async () => {
    server = await startTestServer();
    owner = await createTestUser(server.platform.db, await createTestOrg(server.platform.db, "Paging"), "owner");
    runner = grpcClient(
      SessionRunnerService,
      server.internalGrpcUrl,
      bearer(await createTestServiceAccount(server.platform.db)),
    );
    runnerB = grpcClient(
      SessionRunnerService,
      server.internalGrpcUrl,
      bearer(await createTestServiceAccount(server.platform.db)),
    );
  });
  afterAll(async () => {
    runner?.close();
    runnerB?.close();
    await server?.close();
  });

  const createSession = (title: string) =>
    runner.call(SessionRunnerService.method.createSession, { orgId: owner.orgId, userId: owner.userId, title });
  const post = (sessionId: string, text: string) =>
    api(server.restUrl, owner.key, `/api/v0/sessions/${sessionId}/messages`, { method: "POST", body: { text } });

  /**
   * Three writers posting messages (and now and then creating a session) until stopped or
   * `maxWrites` are done: a reader paging oldest-first through a list that grows faster than it
   * reads would never reach the end, so the messages test bounds the writes.
   */
  function background(sessionIds: string[], maxWrites = Infinity) {
    let stop = false;
    let writes = 0;
    const writer = async (w: number) => {
      while (!stop && writes < maxWrites) {
        const n = writes++;
        const res = await post(sessionIds[(n + w) % sessionIds.length]!, `background ${n}`);
        expect(res.status).toBe(200);
        if (n % 5 === 4) await createSession(`new ${n}`);
      }
    };
    const loops = Promise.all([0, 1, 2].map(writer));
    return {
      async stop() {
        stop = true;
        await loops;
        return writes;
      },
    };
  }

  async function pageAll(path: string, key: "sessions" | "messages", limit: number, between: () => Promise<void>) {
    const seen: any[] = [];
    let cursor = "";
    for (let page = 0; page < 200; page++) {
      const sep = path.includes("?") ? "&" : "?";
      const res = await api(
        server.restUrl,
        owner.key,
        `${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`,
      );
      expect(res.status).toBe(200);
      expect(res.json[key].length).toBeLessThanOrEqual(limit);
      seen.push(...res.json[key]);
      if (!res.json.pagination.hasMore) return seen;
      expect(res.json[key]).toHaveLength(limit);
      cursor = res.json.pagination.nextCursor;
      await between();
    }
    throw new Error("paging did not end");
  }

  it("lists every session that existed when the listing began exactly once, newest first", async () => {
    const before: string[] = [];
    for (let i = 0; i < 8; i++) before.push((await createSession(`s${i}`)).sessionId);
    for (const limit of [1, 2, 3]) {
      const start = (await pageAll("/api/v0/sessions", "sessions", 100, async () => {})).map((s) => s.sessionId);
      const writer = background([...before].reverse());
      // Give the writer a turn between pages so pages and writes interleave.
      const seen = await pageAll(
        "/api/v0/sessions",
        "sessions",
        limit,
        () => new Promise((r) => setTimeout(r, 5)),
      ).finally(() => writer.stop());
      const writes = await writer.stop();
      expect(writes).toBeGreaterThan(0);
      const ids = seen.map((s) => s.sessionId);
      expect(new Set(ids).size).toBe(ids.length);
      // Everything that existed at the start, nothing else (new sessions wait for a fresh listing)...
      expect(ids).toEqual(start);
      // ...and a fresh listing is newest first by updatedAt.
      const fresh = await pageAll("/api/v0/sessions", "sessions", 100, async () => {});
      const times = fresh.map((s: any) => s.updatedAt);
      expect(times).toEqual([...times].sort((a: number, b: number) => b - a));
    }
  });

  it("lists every message exactly once, oldest first, while more are posted", async () => {
    const session = (await createSession("chatty")).sessionId;
    for (let i = 0; i < 7; i++) expect((await post(session, `m${i}`)).status).toBe(200);
    for (const limit of [1, 2, 3]) {
      const start = (await pageAll(`/api/v0/sessions/${session}/messages`, "messages", 100, async () => {})).map(
        (m) => m.id,
      );
      const writer = background([session], 12);
      const seen = await pageAll(
        `/api/v0/sessions/${session}/messages`,
        "messages",
        limit,
        () => new Promise((r) => setTimeout(r, 5)),
      ).finally(() => writer.stop());
      const ids = seen.map((m) => m.id);
      expect(new Set(ids).size).toBe(ids.length);
      // The messages that existed come first, in order; those posted meanwhile follow them.
      expect(ids.slice(0, start.length)).toEqual(start);
      const created = seen.map((m) => m.createdAt);
      expect(created).toEqual([...created].sort((a: number, b: number) => a - b));
      // Paging to the end missed none of the messages committed before the last page.
      const all = (await pageAll(`/api/v0/sessions/${session}/messages`, "messages", 100, async () => {})).map(
        (m) => m.id,
      );
      expect(all.slice(0, ids.length)).toEqual(ids);
    }
  });

  async function pendingSessions(user: TestUser, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const s = await runner.call(SessionRunnerService.method.createSession, {
        orgId: user.orgId,
        userId: user.userId,
        title: `job ${i}`,
      });
      const posted = await api(server.restUrl, user.key, `/api/v0/sessions/${s.sessionId}/messages`, {
        method: "POST",
        body: { text: `do ${i}` },
      });
      expect(posted.json.status).toBe("pending");
      ids.push(s.sessionId);
    }
    return ids;
  }

  it("never gives two runners the same session", async () => {
    const user = await createTestUser(server.platform.db, await createTestOrg(server.platform.db, "Runners"), "member");
    const ids = await pendingSessions(user, 5);
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        (i % 2 ? runner : runnerB).call(SessionRunnerService.method.claimSession, {
          runnerId: `runner-${i}`,
          orgId: user.orgId,
        }),
      ),
    );
    const won = claims.filter((c) => c.session).map((c) => c.session!.sessionId);
    expect(won.sort()).toEqual([...ids].sort());
    expect(claims.filter((c) => !c.session)).toHaveLength(3);
    for (const c of claims.filter((c) => c.session)) {
      expect(c.orgId).toBe(user.orgId);
      expect(c.leaseExpiresAt).toBeGreaterThan(Date.now());
      const done = await runner.call(SessionRunnerService.method.finishRun, {
        sessionId: c.session!.sessionId,
        leaseToken: c.leaseToken,
      });
      expect(done.status).toBe("idle");
    }
  });

  it("lets another runner claim a session whose lease expired", async () => {
    const user = await createTestUser(server.platform.db, await createTestOrg(server.platform.db, "Leases"), "member");
    const [id] = await pendingSessions(user, 1);
    const dead = await runner.call(SessionRunnerService.method.claimSession, {
      runnerId: "dies",
      orgId: user.orgId,
      leaseSeconds: 5,
    });
    expect(dead.session?.sessionId).toBe(id);
    expect(
      (await runnerB.call(SessionRunnerService.method.claimSession, { runnerId: "waits", orgId: user.orgId })).session,
    ).toBeUndefined();
    // Wait out the real lease.
    await new Promise((r) => setTimeout(r, Math.max(0, dead.leaseExpiresAt - Date.now()) + 150));
    expect((await api(server.restUrl, user.key, `/api/v0/sessions/${id}`)).json.status).toBe("pending");
    const next = await runnerB.call(SessionRunnerService.method.claimSession, {
      runnerId: "takes-over",
      orgId: user.orgId,
    });
    expect(next.session?.sessionId).toBe(id);
    expect(next.pendingMessages.map((m) => m.content[0]?.text)).toEqual(["do 0"]);
    // The dead runner's token no longer works.
    await expect(
      runner.call(SessionRunnerService.method.appendMessages, {
        sessionId: id!,
        leaseToken: dead.leaseToken,
        messages: [{ role: "assistant", content: [{ text: "zombie", id: "" }] }],
      }),
    ).rejects.toMatchObject({ code: 9 });
    await runnerB.call(SessionRunnerService.method.appendMessages, {
      sessionId: id!,
      leaseToken: next.leaseToken,
      messages: [{ role: "assistant", content: [{ text: "done", id: "" }] }],
    });
    const finished = await runnerB.call(SessionRunnerService.method.finishRun, {
      sessionId: id!,
      leaseToken: next.leaseToken,
    });
    expect(finished).toMatchObject({ status: "idle", messageCount: 2 });
  }, 15_000);
});
