// Abandoned calls (the client left, or the deadline passed) get no work from ComputerService:
// they answer Canceled before reading or storing anything.
import { create, type DescMethod } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ComputerService, HostService } from "../../gen/agentplane/computers/v1alpha1/computers_pb.js";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import { codeOf, directCallContext } from "../../test/support/abandoned.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { createOrganization } from "../organization/queries.js";
import type { Principal } from "../platform/context.js";
import { createComputerService, createHostService } from "./handlers.js";
import { findComputerByName } from "./queries.js";

const methods = ComputerService.method;

describe("abandoned computer calls", () => {
  let database: TestDatabase<Database>;
  let principal: Principal;
  let service: ReturnType<typeof createComputerService>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    const orgId = (await createOrganization(database.db, { name: "Abandoned computers" })).id;
    const credential = { credentialKind: "api_key", credentialId: "key:member", rateLimitPerMinute: 10_000 } as const;
    principal = { orgId, userId: "member", role: "member", ...credential };
    service = createComputerService({ db: database.db });
  });
  afterAll(() => database?.drop());

  const left = (method: DescMethod) => directCallContext(method, principal, AbortSignal.abort());
  const live = (method: DescMethod) => directCallContext(method, principal, new AbortController().signal);
  const named = (name: string) => findComputerByName(database.db, principal.orgId, name);

  it("creates, changes and reads nothing for a call whose client left", async () => {
    const createReq = create(methods.createComputer.input, { name: "dev-1", remoteUser: "ada" });
    expect(await codeOf(() => service.createComputer!(createReq, left(methods.createComputer)))).toBe(Code.Canceled);
    expect(await named("dev-1")).toBeUndefined();

    // Not abandoned, the same call goes through; then the computer is there to change and read.
    const created = await service.createComputer!(createReq, live(methods.createComputer));
    const rename = create(methods.updateComputer.input, { computerId: created.id!, name: "dev-2" });
    expect(await codeOf(() => service.updateComputer!(rename, left(methods.updateComputer)))).toBe(Code.Canceled);
    expect(await named("dev-1")).toBeDefined();

    const get = create(methods.getComputerByName.input, { name: "dev-1" });
    expect(await codeOf(() => service.getComputerByName!(get, left(methods.getComputerByName)))).toBe(Code.Canceled);
    expect(await service.getComputerByName!(get, live(methods.getComputerByName))).toMatchObject({ name: "dev-1" });
    expect(await service.updateComputer!(rename, live(methods.updateComputer))).toMatchObject({ name: "dev-2" });
  });

  it("registers no host for an internal call whose client left", async () => {
    const hostId = "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b";
    await service.createComputer!(
      create(methods.createComputer.input, { name: "byom-1", remoteUser: "ada", hostId }),
      live(methods.createComputer),
    );
    const hosts = createHostService({ db: database.db });
    const workload = {
      accountId: "sa-host",
      name: "host",
      orgId: principal.orgId,
      scopes: ["computers.host"],
      credentialId: "account:sa-host",
    };
    const method = HostService.method.registerHost;
    const req = create(method.input, {
      hostId,
      hostname: "ada-laptop.local",
      relayClientUrl: "wss://relay.example.com/c/1",
      relayAgentUrl: "wss://relay.example.com/a/1",
    });
    const call = (signal: AbortSignal) => hosts.registerHost!(req, directCallContext(method, workload, signal));
    expect(await codeOf(() => call(AbortSignal.abort()))).toBe(Code.Canceled);
    expect(await named("byom-1")).toMatchObject({ status: "provisioning" });
    expect(await call(new AbortController().signal)).toMatchObject({ status: "active", hostname: "ada-laptop.local" });
  });
});
