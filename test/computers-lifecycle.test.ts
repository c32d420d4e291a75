// Computers, whole (issue 20, item 4): GET /api/v0/computers (keyset pages), DELETE
// /api/v0/computers/{id} (204; 409 while a session runs or waits on it; idle sessions detached)
// and POST /api/v0/computers/{id}/provisioning/retry against a local server that follows E2B's
// sandbox API. Through the REST edge and over gRPC with a @grpc/grpc-js client.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ComputerService } from "../gen/agentplane/computers/v1alpha1/computers_pb.js";
import { SessionRunnerService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { computersModule } from "../services/computers/module.js";
import type { Worker } from "../services/platform/module.js";
import { startE2bApiTestServer, type E2bApiTestServer } from "./support/e2b-api-test-server.js";
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

const WEB = "https://github.com/acme/web.git";

describe("computers, whole", () => {
  let server: TestServer;
  let e2b: E2bApiTestServer;
  let owner: TestUser;
  let member: TestUser;
  let guest: TestUser;
  let outsider: TestUser;
  let runner: GrpcCaller;
  let publicGrpc: GrpcCaller;
  const workers: Worker[] = [];

  const rest = (user: TestUser | undefined, path: string, init: Parameters<typeof api>[3] = {}) =>
    api(server.restUrl, user?.key, path, init);
  const create = async (user: TestUser, body: Record<string, unknown>) => {
    const res = await rest(user, "/api/v0/computers", { method: "POST", body: { remoteUser: "dev", ...body } });
    expect(res.status).toBe(201);
    return res.json;
  };
  const byName = (user: TestUser, name: string) => rest(user, `/api/v0/computers/name/${encodeURIComponent(name)}`);
  const del = (user: TestUser, id: string) => rest(user, `/api/v0/computers/${id}`, { method: "DELETE" });
  const retry = (user: TestUser, id: string) =>
    rest(user, `/api/v0/computers/${id}/provisioning/retry`, { method: "POST" });
  const settled = async (name: string) => {
    for (let i = 0; i < 300; i++) {
      const c = (await byName(member, name)).json;
      if (c.status !== "provisioning") return c;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${name} did not finish provisioning`);
  };
  const startWorker = async () => {
    workers.push(await computersModule.start!(server.platform));
  };

  beforeAll(async () => {
    e2b = await startE2bApiTestServer();
    server = await startTestServer({ E2B_API_KEY: e2b.apiKey, E2B_API_URL: e2b.url, E2B_SANDBOX_URL: e2b.url });
    const db = server.platform.db;
    const orgId = await createTestOrg(db, "Computers whole");
    owner = await createTestUser(db, orgId, "owner");
    member = await createTestUser(db, orgId, "member");
    guest = await createTestUser(db, orgId, "guest");
    outsider = await createTestUser(db, await createTestOrg(db, "Elsewhere"), "owner");
    runner = grpcClient(SessionRunnerService, server.internalGrpcUrl, bearer(await createTestServiceAccount(db)));
    publicGrpc = grpcClient(ComputerService, server.grpcUrl);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    e2b.onCommand = () => ({ exitCode: 0, stdout: "ok\n" });
  });
  afterAll(async () => {
    runner?.close();
    publicGrpc?.close();
    await server?.close();
    await e2b?.close();
  });

  describe("GET /api/v0/computers", () => {
    it("pages through the organization's computers oldest first, each exactly once, as GET by name shows them", async () => {
      const before = (await rest(guest, "/api/v0/computers?limit=100")).json.computers.length;
      const names = ["list-a", "list-b", "list-c"];
      for (const name of names) await create(member, { name });
      await create(outsider, { name: "list-elsewhere" });

      const seen: any[] = [];
      let cursor = "";
      let pages = 0;
      do {
        const res = await rest(guest, `/api/v0/computers?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
        expect(res.status).toBe(200);
        expect(Object.keys(res.json).sort()).toEqual(["computers", "pagination"]);
        expect(res.json.computers.length).toBeLessThanOrEqual(2);
        expect(res.json.pagination.hasMore).toBe(res.json.pagination.nextCursor !== "");
        seen.push(...res.json.computers);
        cursor = res.json.pagination.nextCursor;
        pages++;
      } while (cursor);
      expect(seen).toHaveLength(before + 3);
      expect(pages).toBe(Math.ceil((before + 3) / 2));
      expect(new Set(seen.map((c) => c.id)).size).toBe(seen.length);
      expect(seen.map((c) => c.name).slice(-3)).toEqual(names);
      const order = seen.map((c) => [c.createdAt, c.id]);
      expect(order).toEqual(
        [...order].sort(([at1, id1], [at2, id2]) => at1 - at2 || (id1 < id2 ? -1 : id1 > id2 ? 1 : 0)),
      );
      for (const listed of seen.slice(-3)) expect(listed).toEqual((await byName(owner, listed.name)).json);
      // Another organization lists only its own.
      const theirs = (await rest(outsider, "/api/v0/computers")).json.computers.map((c: any) => c.name);
      expect(theirs).toContain("list-elsewhere");
      for (const name of names) expect(theirs).not.toContain(name);
    });

    it("defaults to 20 a page; a bad limit or cursor is a 400 naming it; no credential is a 401", async () => {
      for (let i = 0; i < 21; i++) await create(owner, { name: `many-${i}` });
      const first = await rest(member, "/api/v0/computers");
      expect(first.json.computers).toHaveLength(20);
      expect(first.json.pagination.hasMore).toBe(true);
      for (const limit of ["0", "101", "abc", "1.5"])
        expectErrorBody(await rest(member, `/api/v0/computers?limit=${limit}`), 400, "limit");
      expectErrorBody(await rest(member, "/api/v0/computers?cursor=forged"), 400, "cursor");
      // A cursor works only for the credential it was issued to.
      const token = first.json.pagination.nextCursor;
      expectErrorBody(await rest(owner, `/api/v0/computers?cursor=${token}`), 400, "cursor");
      expect((await rest(undefined, "/api/v0/computers")).status).toBe(401);
    });

    it("over gRPC: the same pages", async () => {
      const viaRest = (await rest(member, "/api/v0/computers?limit=3")).json;
      const viaGrpc = await publicGrpc.call(ComputerService.method.listComputers, { limit: "3" }, bearer(member.key));
      expect(viaGrpc.computers.map((c) => c.id)).toEqual(viaRest.computers.map((c: any) => c.id));
      expect(viaGrpc.pagination?.hasMore).toBe(true);
      await expect(
        publicGrpc.call(ComputerService.method.listComputers, { limit: "x" }, bearer(member.key)),
      ).rejects.toMatchObject({ code: 3, details: expect.stringContaining("limit") });
    });
  });

  describe("DELETE /api/v0/computers/{computerId}", () => {
    it("204 with no body; then it is a 404, lists omit it, its name is free", async () => {
      const c = await create(member, { name: "to-delete" });
      const res = await del(member, c.id);
      expect(res.status).toBe(204);
      expect(res.text).toBe("");
      expectErrorBody(await byName(member, "to-delete"), 404, "computer");
      const listed = (await rest(member, "/api/v0/computers?limit=100")).json.computers.map((x: any) => x.id);
      expect(listed).not.toContain(c.id);
      const steps = await server.platform.db
        .selectFrom("computer_provisioning_steps")
        .select("id")
        .where("computer_id", "=", c.id)
        .execute();
      expect(steps).toEqual([]);
      expectErrorBody(await del(member, c.id), 404, "computer");
      expect((await create(member, { name: "to-delete" })).id).not.toBe(c.id);
    });

    it("guests cannot delete (403); another organization's computer is a 404 and stays", async () => {
      const c = await create(owner, { name: "kept" });
      expectErrorBody(await del(guest, c.id), 403, "guest");
      expectErrorBody(await del(outsider, c.id), 404, "computer");
      expectErrorBody(await del(member, "no-such-computer"), 404, "computer");
      expect((await byName(owner, "kept")).status).toBe(200);
      expect((await del(owner, c.id)).status).toBe(204);
    });

    it("409 while a session on it is pending or running; once none is, 204 and its idle sessions lose the computerId", async () => {
      const c = await create(member, { name: "busy-box" });
      const session = async (body: Record<string, unknown>) =>
        (await rest(member, "/api/v0/sessions", { method: "POST", body: { computerId: c.id, ...body } })).json;
      const idle = await session({ title: "idle on busy-box" });
      const busy = await session({ title: "pending on busy-box", text: "build it" });
      expect([idle.status, busy.status]).toEqual(["idle", "pending"]);

      const pending = await del(member, c.id);
      expectErrorBody(pending, 409, "in use by 1 pending session");
      const claimed = await runner.call(SessionRunnerService.method.claimSession, {
        runnerId: "r1",
        orgId: member.orgId,
      });
      expect(claimed.session?.sessionId).toBe(busy.sessionId);
      expectErrorBody(await del(owner, c.id), 409, "in use by 1 running session");
      await expect(
        publicGrpc.call(ComputerService.method.deleteComputer, { computerId: c.id }, bearer(owner.key)),
      ).rejects.toMatchObject({ code: 10, details: expect.stringContaining("1 running session") });
      // Nothing changed meanwhile.
      expect((await byName(member, "busy-box")).status).toBe(200);
      expect((await rest(member, `/api/v0/sessions/${idle.sessionId}`)).json.computerId).toBe(c.id);

      await runner.call(SessionRunnerService.method.finishRun, {
        sessionId: busy.sessionId,
        leaseToken: claimed.leaseToken,
      });
      const before = (await rest(member, `/api/v0/sessions/${idle.sessionId}`)).json;
      expect((await del(member, c.id)).status).toBe(204);
      for (const s of [idle, busy]) {
        const got = await rest(member, `/api/v0/sessions/${s.sessionId}`);
        expect(got.status).toBe(200);
        expect(got.json).not.toHaveProperty("computerId");
      }
      // Only the computerId went: updatedAt and the rest are as they were.
      const { computerId, ...unchanged } = before;
      expect(computerId).toBe(c.id);
      expect((await rest(member, `/api/v0/sessions/${idle.sessionId}`)).json).toEqual(unchanged);
      const onIt = await rest(member, `/api/v0/sessions?computerId=${c.id}`);
      expect(onIt.json.sessions).toEqual([]);
      // A session can no longer name it.
      expectErrorBody(
        await rest(member, "/api/v0/sessions", { method: "POST", body: { computerId: c.id } }),
        400,
        "computerId",
      );
    });

    it("racing session creations: each session either names no computer afterwards or was refused; none names a deleted one", async () => {
      for (let round = 0; round < 15; round++) {
        const c = await create(member, { name: `race-${round}` });
        const creations = Array.from({ length: 8 }, () =>
          rest(member, "/api/v0/sessions", { method: "POST", body: { computerId: c.id } }),
        );
        const deleted = del(member, c.id);
        const results = await Promise.all(creations);
        expect((await deleted).status).toBe(204);
        for (const res of results) {
          if (res.status === 400) {
            expect(res.json.detail).toContain("computerId");
            continue;
          }
          expect(res.status).toBe(201);
          expect((await rest(member, `/api/v0/sessions/${res.json.sessionId}`)).json).not.toHaveProperty("computerId");
        }
        const dangling = await server.platform.db
          .selectFrom("sessions")
          .select("id")
          .where("computer_id", "=", c.id)
          .execute();
        expect(dangling).toEqual([]);
      }
    });

    it("over gRPC: 204's Empty, the same 404 and 403; an empty computerId is a 400 naming it", async () => {
      const c = await create(member, { name: "grpc-delete" });
      await expect(
        publicGrpc.call(ComputerService.method.deleteComputer, { computerId: c.id }, bearer(guest.key)),
      ).rejects.toMatchObject({ code: 7 });
      await expect(
        publicGrpc.call(ComputerService.method.deleteComputer, { computerId: c.id }, bearer(outsider.key)),
      ).rejects.toMatchObject({ code: 5 });
      await expect(
        publicGrpc.call(ComputerService.method.deleteComputer, { computerId: "" }, bearer(member.key)),
      ).rejects.toMatchObject({ code: 3, details: expect.stringMatching(/^computerId.* is required$/) });
      await publicGrpc.call(ComputerService.method.deleteComputer, { computerId: c.id }, bearer(member.key));
      expect((await byName(member, "grpc-delete")).status).toBe(404);
    });
  });

  describe("POST /api/v0/computers/{computerId}/provisioning/retry", () => {
    it("a failed clone is run again; the sandbox made before it is kept, and the computer becomes active", async () => {
      let cloneAttempts = 0;
      e2b.onCommand = (call) => {
        if (call.envs.REPO_URL !== WEB) return { exitCode: 0 };
        cloneAttempts++;
        return cloneAttempts === 1
          ? {
              exitCode: 128,
              stderr: "fatal: unable to access 'https://github.com/acme/web.git/': Could not resolve host\n",
            }
          : { exitCode: 0 };
      };
      const c = await create(member, { name: "retry-clone", provider: "e2b", repos: [WEB], autoInstallDeps: true });
      await startWorker();
      const failed = await settled("retry-clone");
      expect(failed.status).toBe("error");
      expect(failed.provisioningSteps.map((s: any) => s.status)).toEqual(["succeeded", "failed", "skipped"]);
      expect(failed.provisioningSteps[1].error).toContain("exit code 128");

      const res = await retry(member, c.id);
      expect(res.status).toBe(200);
      expect(res.json.id).toBe(c.id);
      // Right after the retry, before the worker takes it up (or while it does).
      expect(res.json.provisioningSteps[0]).toEqual(failed.provisioningSteps[0]);
      for (const s of res.json.provisioningSteps.slice(1)) expect(s).not.toHaveProperty("error");

      const done = await settled("retry-clone");
      expect(done.status).toBe("active");
      expect(done.provisioningSteps.map((s: any) => s.status)).toEqual(["succeeded", "succeeded", "succeeded"]);
      expect(done.provisioningSteps[0]).toEqual(failed.provisioningSteps[0]);
      const sandboxes = [...e2b.sandboxes.values()].filter((s) => s.metadata.agentplaneComputerId === c.id);
      expect(sandboxes).toHaveLength(1);
      const commands = e2b.commands.filter((x) => x.sandboxId === sandboxes[0]!.sandboxID);
      expect(commands.map((x) => (x.envs.REPO_URL ? "clone" : "install"))).toEqual(["clone", "clone", "install"]);
      expect(cloneAttempts).toBe(2);
    });

    it("a failed sandbox creation is run again from the first step", async () => {
      e2b.failNext("POST /sandboxes", 429, "rate limit exceeded: too many concurrent sandboxes");
      const c = await create(member, { name: "retry-sandbox", provider: "e2b", repos: [WEB] });
      await startWorker();
      const failed = await settled("retry-sandbox");
      expect(failed.provisioningSteps.map((s: any) => [s.status, s.error])).toEqual([
        ["failed", "E2B POST /sandboxes answered 429: rate limit exceeded: too many concurrent sandboxes"],
        ["skipped", undefined],
      ]);
      // Over gRPC this time.
      const retried = await publicGrpc.call(
        ComputerService.method.retryComputerProvisioning,
        { computerId: c.id },
        bearer(member.key),
      );
      expect(retried.status).toBe("provisioning");
      expect(retried.provisioningSteps.map((s) => s.error)).toEqual([undefined, undefined]);
      const done = await settled("retry-sandbox");
      expect(done.status).toBe("active");
      expect([...e2b.sandboxes.values()].filter((s) => s.metadata.agentplaneComputerId === c.id)).toHaveLength(1);
    });

    it("409 unless the computer is in error, saying its status; 403 for guests; 404 across organizations", async () => {
      const byom = await create(member, { name: "retry-byom" });
      expectErrorBody(await retry(member, byom.id), 409, "computer is provisioning");
      await expect(
        publicGrpc.call(ComputerService.method.retryComputerProvisioning, { computerId: byom.id }, bearer(member.key)),
      ).rejects.toMatchObject({ code: 10, details: expect.stringContaining("status error") });

      e2b.failNext("POST /sandboxes", 500, "internal error");
      const broken = await create(member, { name: "retry-refused", provider: "e2b" });
      await startWorker();
      expect((await settled("retry-refused")).status).toBe("error");
      expectErrorBody(await retry(guest, broken.id), 403, "guest");
      expectErrorBody(await retry(outsider, broken.id), 404, "computer");
      expectErrorBody(await retry(member, "no-such-computer"), 404, "computer");
      await expect(
        publicGrpc.call(ComputerService.method.retryComputerProvisioning, { computerId: "" }, bearer(member.key)),
      ).rejects.toMatchObject({ code: 3, details: expect.stringMatching(/^computerId.* is required$/) });
      // Nothing of that reset it.
      expect((await byName(member, "retry-refused")).json.status).toBe("error");
    });
  });
});
