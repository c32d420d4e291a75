// Abandoned calls (the client left, or the deadline passed) get no work from the analytics
// endpoints: they check their signal once a database connection is free and before their
// largest read.
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AnalyticsService } from "../../../gen/agentplane/analytics/v1/analytics_pb.js";
import { abortedSignal, codeOf, countingStatements, directCallContext } from "../../../test/support/abandoned.js";
import { createTestDatabase, type TestDatabase } from "../../../test/support/database.js";
import type { Database } from "../../database.js";
import { migrations } from "../../migrations.js";
import { createOrganization, createUser } from "../../organization/queries.js";
import type { Principal } from "../../platform/context.js";
import { createAnalyticsService } from "./handlers.js";

const NOW = Date.parse("2027-03-01T08:00:00Z");
const RANGE = { startDate: "2027-02-01", endDate: "2027-02-27" };

describe("abandoned analytics calls", () => {
  let database: TestDatabase<Database>;
  let principal: Principal;
  /** The service's database handle, counting the statements sent through it. */
  let statements: ReturnType<typeof countingStatements<Database>>;
  let service: ReturnType<typeof createAnalyticsService>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    const orgId = (await createOrganization(database.db, { name: "Abandoned analytics" })).id;
    const userId = (await createUser(database.db, { orgId, email: "owner@abandoned.test", role: "owner" })).id;
    const credential = { credentialKind: "api_key", credentialId: "key:owner", rateLimitPerMinute: 10_000 } as const;
    principal = { orgId, userId, role: "owner", ...credential };
    statements = countingStatements(database.db);
    service = createAnalyticsService({ db: statements.db, now: () => NOW });
  }, 60_000);
  afterAll(() => database?.drop());

  type Method = (typeof AnalyticsService.method)[keyof typeof AnalyticsService.method];
  const first = (stream: AsyncIterable<unknown>) => stream[Symbol.asyncIterator]().next();
  const context = (method: Method, signal: AbortSignal) => directCallContext(method, principal, signal);

  it("reads nothing for an abandoned call of any endpoint and answers Canceled", async () => {
    const m = AnalyticsService.method;
    const gone = abortedSignal;
    const afterOwner = { ...RANGE, cursor: principal.userId };
    const calls = [
      () => service.getTokens!(create(m.getTokens.input, RANGE), context(m.getTokens, gone())),
      () => service.getTokens!(create(m.getTokens.input, { ...RANGE, groupBy: "model" }), context(m.getTokens, gone())),
      () => service.getTools!(create(m.getTools.input, RANGE), context(m.getTools, gone())),
      () => service.getActivity!(create(m.getActivity.input, RANGE), context(m.getActivity, gone())),
      () => service.getProductivity!(create(m.getProductivity.input, RANGE), context(m.getProductivity, gone())),
      () => service.getUsers!(create(m.getUsers.input, afterOwner), context(m.getUsers, gone())),
      // The REST routes (HttpBody streams), as JSON and as exports: their first message.
      ...(["", "csv"] as const).flatMap((format) => [
        () =>
          first(
            service.streamTools!(create(m.streamTools.input, { ...RANGE, format }), context(m.streamTools, gone())),
          ),
        () =>
          first(
            service.streamTokens!(create(m.streamTokens.input, { ...RANGE, format }), context(m.streamTokens, gone())),
          ),
        () =>
          first(
            service.streamUsers!(create(m.streamUsers.input, { ...RANGE, format }), context(m.streamUsers, gone())),
          ),
      ]),
    ];
    statements.reset();
    for (const call of calls) expect(await codeOf(call())).toBe(Code.Canceled);
    expect(statements.count()).toBe(0);

    // The same calls, not abandoned, read.
    const live = () => new AbortController().signal;
    const users = await service.getUsers!(create(m.getUsers.input, RANGE), context(m.getUsers, live()));
    expect(users.meta).toMatchObject({ hasMore: false });
    const tools = await service.getTools!(create(m.getTools.input, RANGE), context(m.getTools, live()));
    expect(tools.data).toHaveLength(27);
    expect(statements.count()).toBeGreaterThan(0);
  });
});
