// Abandoned calls (the client left, or the deadline passed) get no work from the analytics
// endpoints: they check their signal once a database connection is free and before their
// largest read.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import type { Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AnalyticsService } from "../../../gen/agentplane/analytics/v1/analytics_pb.js";
import { createTestDatabase, type TestDatabase } from "../../../test/support/database.js";
import type { Database } from "../../database.js";
import { migrations } from "../../migrations.js";
import { createOrganization, createUser } from "../../organization/queries.js";
import { kPrincipal, type Principal } from "../../platform/context.js";
import { createAnalyticsService } from "./handlers.js";

const NOW = Date.parse("2027-03-01T08:00:00Z");
const RANGE = { startDate: "2027-02-01", endDate: "2027-02-27" };

const aborted = () => {
  const controller = new AbortController();
  controller.abort(new Error("client disconnected"));
  return controller.signal;
};

async function codeOf(p: unknown): Promise<Code> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err).code;
  }
  throw new Error("expected the call to fail");
}

describe("abandoned analytics calls", () => {
  let database: TestDatabase<Database>;
  let principal: Principal;
  /** Statements sent through the service's database handle. */
  let statements = 0;
  let service: ReturnType<typeof createAnalyticsService>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    const orgId = (await createOrganization(database.db, { name: "Abandoned analytics" })).id;
    const userId = (await createUser(database.db, { orgId, email: "owner@abandoned.test", role: "owner" })).id;
    principal = { orgId, userId, role: "owner", credentialKind: "api_key", credentialId: "key:owner", rateLimitPerMinute: 10_000 };
    const counted: Kysely<Database> = database.db.withPlugin({
      transformQuery: (args) => {
        statements++;
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    service = createAnalyticsService({ db: counted, now: () => NOW });
  }, 60_000);
  afterAll(() => database?.drop());

  function context(method: (typeof AnalyticsService.method)[keyof typeof AnalyticsService.method], signal: AbortSignal): HandlerContext {
    return createHandlerContext({
      service: AnalyticsService,
      method,
      protocolName: "test",
      requestMethod: "GET",
      url: `test:///${method.name}`,
      requestSignal: signal,
      contextValues: createContextValues().set(kPrincipal, principal),
    });
  }

  it("reads nothing for an abandoned call of any endpoint and answers Canceled", async () => {
    const m = AnalyticsService.method;
    const calls = [
      () => service.getTokens!(create(m.getTokens.input, RANGE), context(m.getTokens, aborted())),
      () => service.getTokens!(create(m.getTokens.input, { ...RANGE, groupBy: "model" }), context(m.getTokens, aborted())),
      () => service.getTools!(create(m.getTools.input, RANGE), context(m.getTools, aborted())),
      () => service.getActivity!(create(m.getActivity.input, RANGE), context(m.getActivity, aborted())),
      () => service.getProductivity!(create(m.getProductivity.input, RANGE), context(m.getProductivity, aborted())),
      () => service.getUsers!(create(m.getUsers.input, { ...RANGE, cursor: principal.userId }), context(m.getUsers, aborted())),
    ];
    statements = 0;
    for (const call of calls) expect(await codeOf(call())).toBe(Code.Canceled);
    expect(statements).toBe(0);

    // The same calls, not abandoned, read.
    const users = await service.getUsers!(create(m.getUsers.input, RANGE), context(m.getUsers, new AbortController().signal));
    expect(users.meta).toMatchObject({ hasMore: false });
    expect((await service.getTools!(create(m.getTools.input, RANGE), context(m.getTools, new AbortController().signal))).data).toHaveLength(27);
    expect(statements).toBeGreaterThan(0);
  });
});
