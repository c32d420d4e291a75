// Abandoned calls (the client left, or the deadline passed) get no work from the reports list:
// it checks its signal once a database connection is free and before reading the page.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, createHandlerContext } from "@connectrpc/connect";
import type { Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReadinessService } from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { createOrganization, createUser } from "../organization/queries.js";
import { kPrincipal, type Principal } from "../platform/context.js";
import { newId } from "../platform/ids.js";
import { createReadinessService } from "./handlers.js";

async function codeOf(p: unknown): Promise<Code> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err).code;
  }
  throw new Error("expected the call to fail");
}

describe("abandoned readiness calls", () => {
  let database: TestDatabase<Database>;
  let principal: Principal;
  /** Statements sent through the service's database handle. */
  let statements = 0;
  let service: ReturnType<typeof createReadinessService>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    const orgId = (await createOrganization(database.db, { name: "Abandoned readiness" })).id;
    const userId = (await createUser(database.db, { orgId, email: "owner@abandoned.test", role: "owner" })).id;
    principal = { orgId, userId, role: "owner", credentialKind: "api_key", credentialId: "key:owner", rateLimitPerMinute: 10_000 };
    const counted: Kysely<Database> = database.db.withPlugin({
      transformQuery: (args) => {
        statements++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    service = createReadinessService({ db: counted });
  }, 60_000);
  afterAll(() => database?.drop());

  const context = (signal: AbortSignal) =>
    createHandlerContext({
      service: ReadinessService,
      method: ReadinessService.method.listReports,
      protocolName: "test",
      requestMethod: "GET",
      url: "test:///ListReports",
      requestSignal: signal,
      contextValues: createContextValues().set(kPrincipal, principal),
    });

  it("reads nothing for an abandoned list and answers Canceled", async () => {
    const controller = new AbortController();
    controller.abort(new Error("client disconnected"));
    statements = 0;
    const input = ReadinessService.method.listReports.input;
    expect(await codeOf(service.listReports!(create(input, {}), context(controller.signal)))).toBe(Code.Canceled);
    expect(await codeOf(service.listReports!(create(input, { repoId: newId() }), context(controller.signal)))).toBe(Code.Canceled);
    expect(statements).toBe(0);

    // Not abandoned, the same list reads.
    expect((await service.listReports!(create(input, {}), context(new AbortController().signal))).reports).toEqual([]);
    expect(statements).toBeGreaterThan(0);
  });
});
