// Abandoned calls (the client left, or the deadline passed) get no work from the reports list:
// it checks its signal once a database connection is free and before reading the page.
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReadinessService } from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import { abortedSignal, codeOf, countingStatements, directCallContext } from "../../test/support/abandoned.js";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { createOrganization, createUser } from "../organization/queries.js";
import type { Principal } from "../platform/context.js";
import { newId } from "../platform/ids.js";
import { createReadinessService } from "./handlers.js";

describe("abandoned readiness calls", () => {
  let database: TestDatabase<Database>;
  let principal: Principal;
  /** The service's database handle, counting the statements sent through it. */
  let statements: ReturnType<typeof countingStatements<Database>>;
  let service: ReturnType<typeof createReadinessService>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    const orgId = (await createOrganization(database.db, { name: "Abandoned readiness" })).id;
    const userId = (await createUser(database.db, { orgId, email: "owner@abandoned.test", role: "owner" })).id;
    const credential = { credentialKind: "api_key", credentialId: "key:owner", rateLimitPerMinute: 10_000 } as const;
    principal = { orgId, userId, role: "owner", ...credential };
    statements = countingStatements(database.db);
    service = createReadinessService({ db: statements.db });
  }, 60_000);
  afterAll(() => database?.drop());

  const context = (signal: AbortSignal) => directCallContext(ReadinessService.method.listReports, principal, signal);

  it("reads nothing for an abandoned list and answers Canceled", async () => {
    statements.reset();
    const input = ReadinessService.method.listReports.input;
    expect(await codeOf(service.listReports!(create(input, {}), context(abortedSignal())))).toBe(Code.Canceled);
    const inRepository = create(input, { repoId: newId() });
    expect(await codeOf(service.listReports!(inRepository, context(abortedSignal())))).toBe(Code.Canceled);
    expect(statements.count()).toBe(0);

    // Not abandoned, the same list reads.
    expect((await service.listReports!(create(input, {}), context(new AbortController().signal))).reports).toEqual([]);
    expect(statements.count()).toBeGreaterThan(0);
  });
});
