// Computers end to end through the REST edge (POST/PATCH/GET by name: status codes, every §2.10
// field, validation, uniqueness, roles, tenancy), host registration over @grpc/grpc-js, and an
// e2b computer on a server without E2B configuration.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ComputerService, HostService } from "../gen/agentplane/computers/v1alpha1/computers_pb.js";
import { NOT_CONFIGURED } from "../services/computers/provisioner.js";
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function expectErrorBody(res: { status: number; json: any; headers: Headers }, status: number, detail: RegExp) {
  expect(res.status).toBe(status);
  expect(res.json).toEqual({
    title: expect.any(String),
    detail: expect.stringMatching(detail),
    status,
    requestId: res.headers.get("x-request-id"),
  });
}

describe("computers API", () => {
  let server: TestServer;
  let owner: TestUser;
  let member: TestUser;
  let guest: TestUser;
  let stranger: TestUser;
  let hosts: GrpcCaller;

  const post = (user: TestUser, body: unknown) =>
    api(server.restUrl, user.key, "/api/v0/computers", { method: "POST", body });
  const patch = (user: TestUser, id: string, body: unknown) =>
    api(server.restUrl, user.key, `/api/v0/computers/${id}`, { method: "PATCH", body });
  const byName = (user: TestUser, name: string) =>
    api(server.restUrl, user.key, `/api/v0/computers/name/${encodeURIComponent(name)}`);

  beforeAll(async () => {
    // Workers on, E2B not configured: an e2b computer must fail its first step and say why.
    server = await startTestServer({ WORKERS: "true" });
    const db = server.platform.db;
    const orgId = await createTestOrg(db, "Computers");
    owner = await createTestUser(db, orgId, "owner");
    member = await createTestUser(db, orgId, "member");
    guest = await createTestUser(db, orgId, "guest");
    stranger = await createTestUser(db, await createTestOrg(db, "Elsewhere"), "owner");
    hosts = grpcClient(HostService, server.internalGrpcUrl, bearer(await createTestServiceAccount(server.platform.db)));
  });
  afterAll(async () => {
    hosts?.close();
    await server?.close();
  });

  it("creates a computer: 201 with every §2.10 field of the right JSON type, all of them once its host registers", async () => {
    const hostId = randomUUID();
    const res = await post(member, {
      name: "ada-laptop",
      remoteUser: "ada",
      provider: "byom",
      hostId,
      repos: [],
      autoInstallDeps: false,
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("x-http-code")).toBeNull();
    const c = res.json;
    expect(c).toMatchObject({
      name: "ada-laptop",
      providerType: "byom",
      hostId,
      status: "provisioning",
      remoteUser: "ada",
    });
    expect(c.id).toMatch(UUID);
    expect(typeof c.createdAt).toBe("number");
    expect(Math.abs(c.createdAt - Date.now())).toBeLessThan(60_000);
    expect(c.provisioningSteps).toEqual([
      {
        id: expect.stringMatching(UUID),
        name: "Wait for the host to register",
        status: "running",
        startedAt: c.createdAt,
      },
    ]);
    // Not known until the host reports them: absent rather than invented.
    for (const field of ["hostname", "relayClientUrl", "relayAgentUrl"]) expect(c).not.toHaveProperty(field);

    const registered = await hosts.call(HostService.method.registerHost, {
      hostId,
      hostname: "ada-laptop.local",
      relayClientUrl: "wss://relay.example.com/client/1",
      relayAgentUrl: "wss://relay.example.com/agent/1",
    });
    expect(registered.status).toBe("active");

    const got = await byName(owner, "ada-laptop");
    expect(got.status).toBe(200);
    const full = got.json;
    expect(Object.keys(full).sort()).toEqual([
      "createdAt",
      "hostId",
      "hostname",
      "id",
      "name",
      "providerType",
      "provisioningSteps",
      "relayAgentUrl",
      "relayClientUrl",
      "remoteUser",
      "status",
    ]);
    expect(full).toMatchObject({
      id: c.id,
      name: "ada-laptop",
      providerType: "byom",
      createdAt: c.createdAt,
      hostId,
      hostname: "ada-laptop.local",
      status: "active",
      relayClientUrl: "wss://relay.example.com/client/1",
      relayAgentUrl: "wss://relay.example.com/agent/1",
      remoteUser: "ada",
    });
    const [step] = full.provisioningSteps;
    expect(step).toMatchObject({
      id: expect.any(String),
      name: expect.any(String),
      status: "succeeded",
      startedAt: expect.any(Number),
      completedAt: expect.any(Number),
    });
    expect(step.completedAt).toBeGreaterThanOrEqual(step.startedAt);
  });

  it("answers 409 for a name the organization already has, not for another organization", async () => {
    await post(member, { name: "shared-name", remoteUser: "u" });
    expectErrorBody(
      await post(owner, { name: "shared-name", remoteUser: "v" }),
      409,
      /^name: a computer named "shared-name" already exists/,
    );
    expect((await post(stranger, { name: "shared-name", remoteUser: "w" })).status).toBe(201);
  });

  it.each([
    ["a 64-character name", { name: "n".repeat(64), remoteUser: "u" }, /^name: must be 1 to 63 characters, got 64/],
    ["an empty name", { name: "", remoteUser: "u" }, /^name: must be 1 to 63/],
    [
      "a 64-character remoteUser",
      { name: "ok", remoteUser: "u".repeat(64) },
      /^remoteUser: must be 1 to 63 characters, got 64/,
    ],
    ["a missing remoteUser", { name: "ok" }, /^remoteUser: must be 1 to 63/],
    ["a hostId that is not a UUID", { name: "ok", remoteUser: "u", hostId: "host-1" }, /^hostId: must be a UUID/],
    [
      "21 repos",
      { name: "ok", remoteUser: "u", repos: Array.from({ length: 21 }, (_, i) => `https://github.com/acme/r${i}`) },
      /^repos: must have at most 20 items, got 21/,
    ],
    [
      "a 2049-character repo URL",
      { name: "ok", remoteUser: "u", repos: [`https://github.com/${"a".repeat(2049 - 19)}`] },
      /^repos\[0\]: must be at most 2048 characters, got 2049/,
    ],
    [
      "a repo that is not a URI",
      { name: "ok", remoteUser: "u", repos: ["github.com/acme/web"] },
      /^repos\[0\]: must be an absolute URI/,
    ],
    ["an unknown provider", { name: "ok", remoteUser: "u", provider: "aws" }, /^provider: must be one of byom, e2b/],
  ])("answers 400 for %s", async (_what, body, detail) => {
    expectErrorBody(await post(member, body), 400, detail);
  });

  it("accepts the limits themselves: 63 characters, 20 repos of 2048 characters", async () => {
    const repos = Array.from(
      { length: 20 },
      (_, i) => `https://github.com/acme/r${i}/${"x".repeat(2048 - `https://github.com/acme/r${i}/`.length)}`,
    );
    const res = await post(member, { name: "n".repeat(63), remoteUser: "u".repeat(63), provider: "byom", repos });
    expect(res.status).toBe(201);
  });

  it("changes only the fields a PATCH names", async () => {
    const hostId = randomUUID();
    const created = (await post(member, { name: "patch-target", remoteUser: "ada", hostId })).json;
    const renamed = await patch(member, created.id, { name: "patched" });
    expect(renamed.status).toBe(200);
    expect(renamed.json).toEqual({ ...created, name: "patched" });
    const user = await patch(owner, created.id, { remoteUser: "grace" });
    expect(user.json).toEqual({ ...created, name: "patched", remoteUser: "grace" });
    expect((await byName(member, "patched")).json).toEqual(user.json);
    expect((await byName(member, "patch-target")).status).toBe(404);
    expectErrorBody(await patch(member, created.id, { name: "x".repeat(64) }), 400, /^name: /);
    expectErrorBody(await patch(member, created.id, { hostId: "nope" }), 400, /^hostId: must be a UUID/);
    expectErrorBody(await patch(member, created.id, { name: "shared-name" }), 409, /^name: /);
    expectErrorBody(await patch(member, randomUUID(), { name: "x" }), 404, /computer not found/);
  });

  it("keeps organizations apart and lets guests only read", async () => {
    const mine = (await post(member, { name: "private-box", remoteUser: "u" })).json;
    expectErrorBody(await byName(stranger, "private-box"), 404, /computer not found/);
    expectErrorBody(await patch(stranger, mine.id, { name: "mine-now" }), 404, /computer not found/);
    expectErrorBody(
      await post(guest, { name: "guest-box", remoteUser: "u" }),
      403,
      /creating computers requires the owner or manager or member role/,
    );
    expectErrorBody(await patch(guest, mine.id, { name: "g" }), 403, /role/);
    expect((await byName(guest, "private-box")).json.id).toBe(mine.id);
    expectErrorBody(await byName(member, "n".repeat(64)), 400, /^name: must be 1 to 63/);
    expect((await api(server.restUrl, undefined, "/api/v0/computers/name/private-box")).status).toBe(401);
  });

  it("serves the same RPCs to a @grpc/grpc-js client", async () => {
    const computers = grpcClient(ComputerService, server.grpcUrl);
    try {
      const created = await computers.call(
        ComputerService.method.createComputer,
        { name: "over-grpc", remoteUser: "u" },
        { authorization: `Bearer ${member.key}` },
      );
      expect(created).toMatchObject({ name: "over-grpc", providerType: "byom", status: "provisioning" });
      const got = await computers.call(
        ComputerService.method.getComputerByName,
        { name: "over-grpc" },
        { authorization: `Bearer ${member.key}` },
      );
      expect(got.id).toBe(created.id);
    } finally {
      computers.close();
    }
  });

  it("fails an e2b computer's first step with a clear error when E2B is not configured", async () => {
    const created = await post(member, {
      name: "no-e2b",
      remoteUser: "user",
      provider: "e2b",
      repos: ["https://github.com/acme/web"],
      autoInstallDeps: true,
    });
    expect(created.status).toBe(201);
    expect(created.json.provisioningSteps.map((s: any) => [s.name, s.status])).toEqual([
      ["Create the E2B sandbox", "pending"],
      ["Clone https://github.com/acme/web", "pending"],
      ["Install dependencies of web", "pending"],
    ]);
    let c: any;
    for (let i = 0; i < 100; i++) {
      c = (await byName(member, "no-e2b")).json;
      if (c.status !== "provisioning") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(c.status).toBe("error");
    expect(c.provisioningSteps.map((s: any) => [s.status, s.error])).toEqual([
      ["failed", NOT_CONFIGURED],
      ["skipped", undefined],
      ["skipped", undefined],
    ]);
  });
});
