// The large exports (/users, /tokens day rows) are streamed: rows are read a batch at a time as
// the client takes the chunks, so the first chunk goes out after one batch, whatever the range
// holds, and a client that leaves stops the reads. Called straight on the implementation, with
// the statements sent to the database counted.
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AnalyticsService } from "../../../gen/agentplane/analytics/v1/analytics_pb.js";
import { codeOf, countingStatements, directCallContext } from "../../../test/support/abandoned.js";
import { createTestDatabase, type TestDatabase } from "../../../test/support/database.js";
import type { Database } from "../../database.js";
import { migrations } from "../../migrations.js";
import { createOrganization, createUser } from "../../organization/queries.js";
import type { Principal } from "../../platform/context.js";
import { writeAnalyticsDemo } from "../demo.js";
import { createAnalyticsService } from "./handlers.js";

const NOW = Date.parse("2027-03-01T08:00:00Z");
const RANGE = { startDate: "2027-01-30", endDate: "2027-02-28" };

describe("streamed exports", () => {
  let database: TestDatabase<Database>;
  let principal: Principal;
  let statements: ReturnType<typeof countingStatements<Database>>;
  let service: ReturnType<typeof createAnalyticsService>;
  let userRows: number;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    const orgId = (await createOrganization(database.db, { name: "Streamed exports" })).id;
    const userId = (await createUser(database.db, { orgId, email: "owner@exports.test", role: "owner" })).id;
    await writeAnalyticsDemo(database.db, orgId, { users: 320, days: 30 }, NOW);
    const count = await database.db
      .selectFrom("analytics_user_daily")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("org_id", "=", orgId)
      .executeTakeFirstOrThrow();
    userRows = Number(count.n);
    const credential = { credentialKind: "api_key", credentialId: "key:owner", rateLimitPerMinute: 10_000 } as const;
    principal = { orgId, userId, role: "owner", ...credential };
    statements = countingStatements(database.db);
    service = createAnalyticsService({ db: statements.db, now: () => NOW });
  }, 300_000);
  afterAll(() => database?.drop());

  const m = AnalyticsService.method;

  it("/users: the first chunk after one batch of rows, then a batch at a time, every row once", async () => {
    expect(userRows).toBeGreaterThan(2 * 2000); // more than two batches
    const controller = new AbortController();
    const ctx = directCallContext(m.streamUsers, principal, controller.signal);
    statements.reset();
    const stream = service.streamUsers!(create(m.streamUsers.input, { ...RANGE, format: "ndjson" }), ctx)[
      Symbol.asyncIterator
    ]();
    const first = await stream.next();
    expect(first.done).toBe(false);
    // The day versions (the ETag), then one batch.
    expect(statements.count()).toBe(2);
    const chunks = [first.value!.data];
    for (let next = await stream.next(); !next.done; next = await stream.next()) chunks.push(next.value.data);
    const lines = Buffer.concat(chunks).toString("utf8").split("\n");
    expect(lines.pop()).toBe("");
    expect(lines).toHaveLength(userRows);
    const keys = lines.map((l) => {
      const row = JSON.parse(l) as { user_id: string; date: string };
      return `${row.user_id}/${row.date}`;
    });
    expect(new Set(keys).size).toBe(userRows);
    expect([...keys].sort()).toEqual(keys); // in (user, day) order across batches
    expect(statements.count()).toBe(1 + Math.ceil((userRows + 1) / 2000));
  });

  it("/users: a client that leaves mid-export stops the reads", async () => {
    const controller = new AbortController();
    const ctx = directCallContext(m.streamUsers, principal, controller.signal);
    statements.reset();
    const stream = service.streamUsers!(create(m.streamUsers.input, { ...RANGE, format: "csv" }), ctx)[
      Symbol.asyncIterator
    ]();
    expect((await stream.next()).done).toBe(false);
    const read = statements.count();
    controller.abort(new Error("client disconnected"));
    expect(await codeOf(() => stream.next())).toBe(Code.Canceled);
    expect(statements.count()).toBe(read);
  });

  it("/tokens: the day rows are read a few days at a time", async () => {
    const ctx = directCallContext(m.streamTokens, principal, new AbortController().signal);
    statements.reset();
    const stream = service.streamTokens!(create(m.streamTokens.input, { ...RANGE, format: "csv" }), ctx)[
      Symbol.asyncIterator
    ]();
    expect((await stream.next()).done).toBe(false);
    // The digests (the ETag), then no more batches than the first chunk needed.
    const atFirst = statements.count();
    expect(atFirst).toBeLessThan(1 + 30 / 4);
    let chunks = 1;
    for (let next = await stream.next(); !next.done; next = await stream.next()) chunks++;
    expect(chunks).toBeGreaterThan(1);
    expect(statements.count()).toBe(1 + Math.ceil(30 / 4));
    expect(statements.count()).toBeGreaterThan(atFirst);
  });
});
