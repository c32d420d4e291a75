// Abandoned calls (the client left, or the deadline passed) get no work from the organization's
// public handlers: they answer Canceled before reading or storing anything.
import { create, type DescMethod } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreditLimitService, OrganizationService } from "../../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import { codeOf, directCallContext } from "../../test/support/abandoned.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import type { Principal } from "../platform/context.js";
import { CursorStore } from "../platform/cursors.js";
import { MemoryKeyValueStore } from "../platform/kv-memory.js";
import { createCreditLimitHandlers, createCreditLimitService } from "./credit-limits/handlers.js";
import { findCreditLimit } from "./credit-limits/queries.js";
import { createOrganizationService } from "./handlers.js";
import { createOrganization, createUser } from "./queries.js";

const methods = OrganizationService.method;

describe("abandoned organization calls", () => {
  let database: TestDatabase<Database>;
  let principal: Principal;
  let service: ReturnType<typeof createOrganizationService> & ReturnType<typeof createCreditLimitHandlers>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    const db = database.db;
    const orgId = (await createOrganization(db, { name: "Abandoned" })).id;
    const userId = (await createUser(db, { orgId, email: "owner@abandoned.test", role: "owner" })).id;
    const credential = { credentialKind: "api_key", credentialId: "key:owner", rateLimitPerMinute: 10_000 } as const;
    principal = { orgId, userId, role: "owner", ...credential };
    const cursors = new CursorStore(new MemoryKeyValueStore());
    service = { ...createOrganizationService({ db, cursors }), ...createCreditLimitHandlers({ db }) };
  });
  afterAll(() => database?.drop());

  const left = (method: DescMethod) => directCallContext(method, principal, AbortSignal.abort());
  const live = (method: DescMethod) => directCallContext(method, principal, new AbortController().signal);

  it("stores no credit limit and lists no users for a call whose client left", async () => {
    const limit = () => findCreditLimit(database.db, principal.orgId, principal.userId);
    const set = create(methods.setUserCreditLimits.input, { users: [{ email: "owner@abandoned.test", limit: 10 }] });
    expect(await codeOf(() => service.setUserCreditLimits(set, left(methods.setUserCreditLimits)))).toBe(Code.Canceled);
    expect(await limit()).toBeUndefined();

    const list = create(methods.listUsers.input, {});
    expect(await codeOf(() => service.listUsers!(list, left(methods.listUsers)))).toBe(Code.Canceled);

    // The same calls, not abandoned, go through.
    expect(await service.setUserCreditLimits(set, live(methods.setUserCreditLimits))).toMatchObject({ errors: [] });
    expect(await limit()).toBe(10);
    const users = await service.listUsers!(list, live(methods.listUsers));
    expect(users.users?.map((u) => u.email)).toEqual(["owner@abandoned.test"]);
  });

  it("reads no balance for an internal call whose client left", async () => {
    const credits = createCreditLimitService({ db: database.db });
    const workload = {
      accountId: "sa-billing",
      name: "billing",
      orgId: principal.orgId,
      scopes: ["organization.credits"],
      credentialId: "account:sa-billing",
    };
    const method = CreditLimitService.method.getCreditBalance;
    const req = create(method.input, { userId: principal.userId });
    const call = (signal: AbortSignal) => credits.getCreditBalance!(req, directCallContext(method, workload, signal));
    expect(await codeOf(() => call(AbortSignal.abort()))).toBe(Code.Canceled);
    expect(await call(new AbortController().signal)).toMatchObject({ usedMonthToDate: 0 });
  });
});
