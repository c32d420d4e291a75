// ComputerService and HostService through an in-memory router transport, over a real test database.
import { Code, createClient, type Client } from "@connectrpc/connect";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handlerTransport, rejection } from "../../test/support/handlers.js";
import { ComputerService, HostService } from "../../gen/agentplane/computers/v1alpha1/computers_pb.js";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { createOrganization } from "../organization/queries.js";
import type { Role } from "../platform/context.js";
import { writeComputersDemo } from "./demo.js";
import { createComputerService, createHostService } from "./handlers.js";

describe("computer handlers", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  let otherOrgId: string;
  let clients: (org: string, role: Role) => Client<typeof ComputerService>;
  let hosts: Client<typeof HostService>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    orgId = (await createOrganization(database.db, { name: "Computers A" })).id;
    otherOrgId = (await createOrganization(database.db, { name: "Computers B" })).id;
    const deps = { db: database.db };
    clients = (org, role) =>
      createClient(
        ComputerService,
        handlerTransport((router) => router.service(ComputerService, createComputerService(deps)), {
          orgId: org,
          role,
        }),
      );
    hosts = createClient(
      HostService,
      handlerTransport((router) => router.service(HostService, createHostService(deps))),
    );
  });
  afterAll(() => database?.drop());

  it("creates a byom computer waiting for its host, and answers 201 through x-http-code", async () => {
    const hostId = randomUUID();
    let status = "";
    const created = await clients(orgId, "member").createComputer(
      { name: "dev-1", remoteUser: "ada", hostId },
      { onHeader: (h) => (status = h.get("x-http-code") ?? "") },
    );
    expect(status).toBe("201");
    expect(created).toMatchObject({
      name: "dev-1",
      providerType: "byom",
      hostId,
      status: "provisioning",
      remoteUser: "ada",
    });
    expect(created.hostname).toBeUndefined();
    expect(created.provisioningSteps).toHaveLength(1);
    expect(created.provisioningSteps[0]).toMatchObject({ name: "Wait for the host to register", status: "running" });
    expect(created.provisioningSteps[0]!.startedAt).toBe(created.createdAt);
  });

  it("refuses duplicate names (409) in one organization but not across organizations", async () => {
    const err = await rejection(clients(orgId, "owner").createComputer({ name: "dev-1", remoteUser: "x" }));
    expect(err.code).toBe(Code.AlreadyExists);
    expect(err.rawMessage).toBe('name: a computer named "dev-1" already exists in this organization');
    await expect(
      clients(otherOrgId, "owner").createComputer({ name: "dev-1", remoteUser: "x" }),
    ).resolves.toMatchObject({ name: "dev-1" });
  });

  it("refuses a hostId another computer uses, in any organization", async () => {
    const hostId = randomUUID();
    await clients(orgId, "owner").createComputer({ name: "h-1", remoteUser: "x", hostId });
    const err = await rejection(
      clients(otherOrgId, "owner").createComputer({ name: "h-2", remoteUser: "x", hostId: hostId.toUpperCase() }),
    );
    expect(err.code).toBe(Code.AlreadyExists);
    expect(err.rawMessage).toBe("hostId: another computer already uses this host");
  });

  it("lets guests read but not write", async () => {
    const err = await rejection(clients(orgId, "guest").createComputer({ name: "g", remoteUser: "x" }));
    expect(err.code).toBe(Code.PermissionDenied);
    expect(await clients(orgId, "guest").getComputerByName({ name: "dev-1" })).toMatchObject({ name: "dev-1" });
    const created = await clients(orgId, "owner").getComputerByName({ name: "dev-1" });
    expect((await rejection(clients(orgId, "guest").updateComputer({ computerId: created.id, name: "x" }))).code).toBe(
      Code.PermissionDenied,
    );
  });

  it("finds computers by name only in the caller's organization", async () => {
    const mine = await clients(orgId, "member").getComputerByName({ name: "dev-1" });
    const theirs = await clients(otherOrgId, "member").getComputerByName({ name: "dev-1" });
    expect(mine.id).not.toBe(theirs.id);
    expect((await rejection(clients(orgId, "member").getComputerByName({ name: "nope" }))).code).toBe(Code.NotFound);
    expect(
      (await rejection(clients(orgId, "member").updateComputer({ computerId: theirs.id, name: "stolen" }))).code,
    ).toBe(Code.NotFound);
    expect((await rejection(clients(orgId, "member").getComputerByName({ name: "x".repeat(64) }))).rawMessage).toMatch(
      /^name: must be 1 to 63/,
    );
  });

  it("updates only the fields present", async () => {
    const c = await clients(orgId, "member").createComputer({
      name: "patch-me",
      remoteUser: "ada",
      provider: "e2b",
      repos: ["https://github.com/acme/web"],
    });
    const renamed = await clients(orgId, "member").updateComputer({ computerId: c.id, name: "patched" });
    expect(renamed).toEqual({ ...c, name: "patched" });
    const unchanged = await clients(orgId, "member").updateComputer({ computerId: c.id });
    expect(unchanged).toEqual(renamed);
    const user = await clients(orgId, "member").updateComputer({ computerId: c.id, remoteUser: "grace" });
    expect(user).toEqual({ ...renamed, remoteUser: "grace" });
    const err = await rejection(clients(orgId, "member").updateComputer({ computerId: c.id, name: "dev-1" }));
    expect(err.code).toBe(Code.AlreadyExists);
    expect((await rejection(clients(orgId, "member").updateComputer({ computerId: c.id, hostId: "nope" }))).code).toBe(
      Code.InvalidArgument,
    );
  });

  it("activates a byom computer when its host registers, and waits again after it moves to another host", async () => {
    const hostId = randomUUID();
    const c = await clients(orgId, "member").createComputer({ name: "byom-reg", remoteUser: "ada", hostId });
    const registered = await hosts.registerHost({
      hostId,
      hostname: "ada-laptop.local",
      relayClientUrl: "wss://relay.example.com/c/1",
      relayAgentUrl: "wss://relay.example.com/a/1",
    });
    expect(registered).toMatchObject({
      id: c.id,
      status: "active",
      hostname: "ada-laptop.local",
      relayClientUrl: "wss://relay.example.com/c/1",
      relayAgentUrl: "wss://relay.example.com/a/1",
    });
    expect(registered.provisioningSteps[0]).toMatchObject({ status: "succeeded" });
    expect(registered.provisioningSteps[0]!.completedAt).toBeGreaterThanOrEqual(
      registered.provisioningSteps[0]!.startedAt!,
    );

    // Same host again: still the same computer, still active.
    expect((await clients(orgId, "member").updateComputer({ computerId: c.id, hostId })).status).toBe("active");
    const moved = await clients(orgId, "member").updateComputer({ computerId: c.id, hostId: randomUUID() });
    expect(moved).toMatchObject({ status: "provisioning", name: "byom-reg", remoteUser: "ada" });
    expect(moved.hostname).toBeUndefined();
    expect(moved.relayClientUrl).toBeUndefined();
    expect(moved.provisioningSteps[0]).toMatchObject({ status: "running" });
    expect(moved.provisioningSteps[0]!.completedAt).toBeUndefined();
    await hosts.registerHost({ hostId: moved.hostId!, hostname: "new-box", relayClientUrl: "", relayAgentUrl: "" });
    const after = await clients(orgId, "member").getComputerByName({ name: "byom-reg" });
    expect(after).toMatchObject({ status: "active", hostname: "new-box" });
    expect(after.relayClientUrl).toBeUndefined();
  });

  it("validates host registrations and answers NOT_FOUND for an unknown host", async () => {
    expect((await rejection(hosts.registerHost({ hostId: "x", hostname: "h" }))).rawMessage).toMatch(
      /^hostId: must be a UUID/,
    );
    expect((await rejection(hosts.registerHost({ hostId: randomUUID(), hostname: "" }))).rawMessage).toMatch(
      /^hostname: /,
    );
    expect(
      (await rejection(hosts.registerHost({ hostId: randomUUID(), hostname: "h", relayClientUrl: "nope" }))).rawMessage,
    ).toMatch(/^relayClientUrl: /);
    expect((await rejection(hosts.registerHost({ hostId: randomUUID(), hostname: "h" }))).code).toBe(Code.NotFound);
  });

  it("leaves an e2b computer's status to the worker when its host registers", async () => {
    const hostId = randomUUID();
    await clients(orgId, "member").createComputer({ name: "e2b-reg", remoteUser: "user", provider: "e2b", hostId });
    const registered = await hosts.registerHost({ hostId, hostname: "sandbox-host" });
    expect(registered).toMatchObject({ status: "provisioning", hostname: "sandbox-host", providerType: "e2b" });
  });

  it("writes demo computers in every status, once", async () => {
    const demoOrg = (await createOrganization(database.db, { name: "Demo" })).id;
    await writeComputersDemo(database.db, demoOrg, { days: 7, users: 3 });
    await writeComputersDemo(database.db, demoOrg, { days: 7, users: 3 });
    const rows = await database.db
      .selectFrom("computers")
      .select(["name", "provider_type", "status"])
      .where("org_id", "=", demoOrg)
      .orderBy("created_at")
      .execute();
    expect(rows).toHaveLength(4);
    expect(new Set(rows.map((r) => r.status))).toEqual(new Set(["provisioning", "active", "error"]));
    expect(new Set(rows.map((r) => r.provider_type))).toEqual(new Set(["byom", "e2b"]));
    const failed = await clients(demoOrg, "guest").getComputerByName({ name: "payments-sandbox" });
    expect(failed.status).toBe("error");
    expect(failed.provisioningSteps.map((s) => s.status)).toEqual(["succeeded", "failed", "skipped"]);
    expect(failed.provisioningSteps[1]!.error).toMatch(/^git clone of .* failed with exit code 128/);
    const active = await clients(demoOrg, "guest").getComputerByName({ name: "ada-workstation" });
    expect(active).toMatchObject({ status: "active", hostname: "ada-workstation.local" });
    expect(active.relayClientUrl).toMatch(/^wss:/);
  });
});
