// The bulk write path, both ways rows travel (arrays the server unnests; binary COPY, Postgres
// only): any string must arrive exactly, the cheap path (plain claims) must fall back correctly
// when some ids were claimed before, duplicates within a batch and across its chunks are stored
// once, past days are marked for the rollup, and claims stored before migration 0008 still count.
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, testLogger, type TestDatabase } from "../../../test/support/database.js";
import type { Database } from "../../database.js";
import { migrations } from "../../migrations.js";
import { createOrganization, createUser } from "../../organization/queries.js";
import { migrateToLatest } from "../../platform/migrator.js";
import { validateEvent, type EventRow, type IncomingEvent, type ValidateOptions } from "./events.js";
import { ingestEvents } from "./ingest.js";
import { createMissingPartitions } from "./partitions.js";
import { integerArray, textArray } from "./pg-arrays.js";
import { storeEvents } from "./store.js";

const AWKWARD = [
  "",
  "NULL",
  "null",
  " padded ",
  "a,b",
  "{braces}",
  'say "hi"',
  "back\\slash",
  "tab\tand\nnewline",
  "ünïcødé ✓",
  "NuLl",
  "a b",
  "emoji 🚀",
];
const NOW = Date.parse("2026-03-05T00:00:00Z");
const TODAY = "2026-03-05";
/** COPY needs Postgres; on PGlite only the arrays path runs. */
const PATHS = process.env.TEST_DATABASE_URL ? (["arrays", "copy"] as const) : (["arrays"] as const);

describe("array literals", () => {
  it("writes bare elements, quotes the rest, and NULL for null", () => {
    expect(textArray(["abc", "2026-03-01T10:00:00.000Z", null, "", "NULL", 'x"y', "a\\b"])).toBe(
      '{abc,2026-03-01T10:00:00.000Z,NULL,"","NULL","x\\"y","a\\\\b"}',
    );
    expect(integerArray([0, 1e15, null])).toBe("{0,1000000000000000,NULL}");
    expect(textArray([])).toBe("{}");
  });
});

describe("storing events", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  let userId: string;
  const base = (): IncomingEvent => ({
    type: "git_commit",
    time: "2026-03-02T10:00:00Z",
    orgId,
    userId,
    client: "web",
  });
  const validated = (event: IncomingEvent, options?: ValidateOptions): EventRow => {
    const v = validateEvent(event, NOW, options);
    if (!v.ok) throw new Error(v.reason);
    return v.row;
  };
  const row = (event: IncomingEvent) => validated(event);
  /** storeEvents in its own transaction, rows travelling the given way. */
  const store = (rows: readonly EventRow[], path: "arrays" | "copy") =>
    database.db.transaction().execute(async (trx) => {
      await createMissingPartitions(trx, ["2026-03"]);
      return storeEvents(trx, rows, TODAY, { copy: path === "copy" });
    });
  const storedIds = async (prefix: string) =>
    (
      await sql<{ event_id: string; n: number }>`
        select event_id, count(*)::int as n from analytics_events where org_id = ${orgId} and event_id like ${`${prefix}%`}
        group by event_id order by event_id`.execute(database.db)
    ).rows;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    orgId = (await createOrganization(database.db, { name: "Store" })).id;
    userId = (await createUser(database.db, { orgId, email: "store@example.test", role: "owner" })).id;
  }, 60_000);

  afterAll(async () => {
    await database?.drop();
  });

  it.each(PATHS)("round-trips any string and number (%s)", async (path) => {
    // More than 100 rows, so that the COPY path is taken where the database has it.
    const events: IncomingEvent[] = AWKWARD.flatMap((text, i) => [
      {
        ...base(),
        type: "hook",
        event: text || "Stop",
        matcher: text,
        command: `cmd ${text}`,
        eventId: `${path}-hook-${i}`,
        ...(text ? { sessionId: text } : {}),
      },
      {
        ...base(),
        type: "tool_call",
        tool: text || "Read",
        autonomyLevel: "manual",
        mcpServer: text,
        eventId: `${path}-tool-${i}`,
      },
      {
        ...base(),
        type: "file_op",
        op: "edited",
        path: `dir/f${text}.ts`,
        language: text || "ts",
        eventId: `${path}-file-${i}`,
        userEmail: text,
      },
      {
        ...base(),
        type: "model_usage",
        modelId: text || "m",
        modelTier: "thinking",
        inputTokens: 1e15,
        outputTokens: i,
        cacheReadTokens: 0,
        cacheWriteTokens: 2 ** 40 + i,
        // Doubles that print with many digits (and one that needs an exponent) must come back exact.
        ...(i % 3 === 2 ? {} : { costUsd: i === 0 ? 1e-7 : i * 0.1 + 1 / 3 }),
        eventId: `${path}-usage-${i}`,
      },
      {
        ...base(),
        type: "lines_changed",
        linesAdded: 1e12 - i,
        ...(i % 2 ? { path: `dir/g${text}.Rs`, language: text || "rust" } : {}),
        eventId: `${path}-lines-${i}`,
      },
      {
        ...base(),
        type: "edit_decision",
        decision: i % 2 ? "accept" : "reject",
        tool: text || "Edit",
        eventId: `${path}-decision-${i}`,
      },
      ...Array.from(
        { length: 6 },
        (_, j): IncomingEvent => ({
          ...base(),
          time: `2026-03-02T10:00:0${j}.${String(i).padStart(3, "0")}Z`,
          eventId: `${path}-commit-${i}-${j}`,
        }),
      ),
    ]);
    expect(events.length).toBeGreaterThanOrEqual(100);
    // The OTLP receiver's rows carry their source; ours are native.
    const rowOf = (e: IncomingEvent, i: number) => {
      const v = validateEvent(e, NOW, i % 4 === 3 ? { source: i % 8 === 3 ? "otlp_log" : "otlp_metric" } : {});
      if (!v.ok) throw new Error(v.reason);
      return v.row;
    };
    expect(await store(events.map(rowOf), path)).toBe(events.length);
    const sourceOf = (eventId: string) => {
      const i = events.findIndex((e) => e.eventId === eventId);
      return i % 4 === 3 ? (i % 8 === 3 ? "otlp_log" : "otlp_metric") : "native";
    };
    const rows = await sql<Record<string, unknown> & { event_id: string; occurred_at: Date }>`
      select event_id, occurred_at, hook_event, hook_matcher, hook_command, session_id, tool, mcp_server, path, extension, language, user_email,
        model_id, model_tier, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, autonomy, role, name, op, type, client,
        lines_added, lines_removed, decision, cost_usd, source
      from analytics_events where org_id = ${orgId} and event_id like ${`${path}-%`}`.execute(database.db);
    const byId = new Map(rows.rows.map((r) => [r.event_id, r]));
    expect(byId.size).toBe(events.length);
    AWKWARD.forEach((text, i) => {
      // Empty optional strings mean "not set" (events.ts); required ones were replaced above.
      expect(byId.get(`${path}-hook-${i}`)).toMatchObject({
        type: "hook",
        client: "web",
        hook_event: text || "Stop",
        hook_matcher: text,
        hook_command: `cmd ${text}`,
        session_id: text || null,
        tool: null,
      });
      expect(byId.get(`${path}-tool-${i}`)).toMatchObject({
        tool: text || "Read",
        mcp_server: text || null,
        autonomy: "manual",
        role: null,
      });
      expect(byId.get(`${path}-file-${i}`)).toMatchObject({
        op: "edited",
        path: `dir/f${text}.ts`,
        extension: "ts",
        language: text || "ts",
        user_email: text || null,
        name: null,
      });
      expect(byId.get(`${path}-usage-${i}`)).toMatchObject({
        model_id: text || "m",
        model_tier: "thinking",
        input_tokens: 1e15,
        output_tokens: i,
        cache_read_tokens: 0,
        cache_write_tokens: 2 ** 40 + i,
        cost_usd: i % 3 === 2 ? null : i === 0 ? 1e-7 : i * 0.1 + 1 / 3,
        lines_added: null,
        decision: null,
      });
      expect(byId.get(`${path}-lines-${i}`)).toMatchObject({
        type: "lines_changed",
        lines_added: 1e12 - i,
        lines_removed: 0,
        path: i % 2 ? `dir/g${text}.Rs` : null,
        extension: i % 2 ? "rs" : null,
        language: i % 2 ? text || "rust" : null,
        cost_usd: null,
      });
      expect(byId.get(`${path}-decision-${i}`)).toMatchObject({
        type: "edit_decision",
        decision: i % 2 ? "accept" : "reject",
        tool: text || "Edit",
        lines_added: null,
        lines_removed: null,
      });
      for (const kind of ["hook", "tool", "file", "usage", "lines", "decision"]) {
        const id = `${path}-${kind}-${i}`;
        expect(byId.get(id)?.source, id).toBe(sourceOf(id));
      }
      for (let j = 0; j < 6; j++) {
        expect(byId.get(`${path}-commit-${i}-${j}`)?.occurred_at.toISOString()).toBe(
          `2026-03-02T10:00:0${j}.${String(i).padStart(3, "0")}Z`,
        );
      }
    });
  });

  it.each(PATHS)(
    "stores only the new events of a batch that mixes them with events stored before (%s)",
    async (path) => {
      const event = (i: number): IncomingEvent => ({ ...base(), eventId: `${path}-mix-${String(i).padStart(3, "0")}` });
      const first = await store([0, 1, 2, 3].map(event).map(row), path);
      expect(first).toBe(4);
      // 2 and 3 were stored before; 4 comes twice; 200 new ones so that COPY carries the claims.
      const again = [2, 3, 4, ...Array.from({ length: 200 }, (_, i) => 5 + i), 4].map(event).map(row);
      expect(await store(again, path)).toBe(201);
      expect(await storedIds(`${path}-mix-`)).toEqual(
        Array.from({ length: 205 }, (_, i) => ({ event_id: `${path}-mix-${String(i).padStart(3, "0")}`, n: 1 })),
      );
    },
  );

  it.each(PATHS)(
    "claims a batch larger than a chunk exactly once, duplicates across its chunks included (%s)",
    async (path) => {
      const id = (i: number) => `${path}-big-${String(i).padStart(5, "0")}`;
      expect(await store([row({ ...base(), eventId: id(9_000) })], path)).toBe(1);
      // 10,500 rows: ids 0..10,399 plus 100 repeats of ids from the start, the end (another chunk
      // of claims) and the one stored before; plus rows without an id, always stored.
      const ids = [
        ...Array.from({ length: 10_400 }, (_, i) => i),
        ...Array.from({ length: 50 }, (_, i) => i),
        ...Array.from({ length: 49 }, (_, i) => 10_399 - i),
        9_000,
      ];
      const rows = ids.map((i) => row({ ...base(), eventId: id(i) }));
      const withoutIds = Array.from({ length: 30 }, () => row({ ...base(), sessionId: `${path}-no-id` }));
      expect(await store([...withoutIds.slice(0, 15), ...rows, ...withoutIds.slice(15)], path)).toBe(10_399 + 30);
      const stored = await storedIds(`${path}-big-`);
      expect(stored.length).toBe(10_400);
      expect(stored.every((r) => r.n === 1)).toBe(true);
      const noId = await sql<{
        n: number;
      }>`select count(*)::int as n from analytics_events where org_id = ${orgId} and session_id = ${`${path}-no-id`} and event_id is null`.execute(
        database.db,
      );
      expect(noId.rows[0]?.n).toBe(30);
    },
  );

  it.each(PATHS)(
    "keeps the caller's transaction usable after a batch fell back to the careful path (%s)",
    async (path) => {
      const rows = [
        row({ ...base(), eventId: `${path}-mix-000` }),
        ...Array.from({ length: 120 }, (_, i) => row({ ...base(), eventId: `${path}-trx-${i}` })),
      ];
      await database.db.transaction().execute(async (trx) => {
        expect(await storeEvents(trx, rows, TODAY, { copy: path === "copy" })).toBe(120);
        // Still in a healthy transaction: another statement runs.
        expect((await sql<{ one: number }>`select 1 as one`.execute(trx)).rows[0]?.one).toBe(1);
      });
      expect((await storedIds(`${path}-trx-`)).length).toBe(120);
    },
  );

  it.each(PATHS)("marks the past days that received events, not today (%s)", async (path) => {
    const org = (await createOrganization(database.db, { name: `Pending ${path}` })).id;
    const user = (await createUser(database.db, { orgId: org, email: `pending-${path}@example.test`, role: "owner" }))
      .id;
    const times = ["2026-03-01T23:59:59.999Z", "2026-03-03T00:00:00Z", "2026-03-05T00:00:01Z", "2026-03-05T23:00:00Z"];
    const events = Array.from(
      { length: 120 },
      (_, i): IncomingEvent => ({ ...base(), orgId: org, userId: user, time: times[i % times.length]! }),
    );
    expect(await store(events.map(row), path)).toBe(120);
    const pending = await sql<{
      day: string;
    }>`select day from analytics_pending_days where org_id = ${org} order by day`.execute(database.db);
    expect(pending.rows.map((r) => r.day)).toEqual(["2026-03-01", "2026-03-03"]);
  });

  it("rejects an event with a NUL character by itself; the rest of the batch is stored", async () => {
    // Postgres text cannot hold U+0000: stored as is, it would fail the whole batch's COPY.
    const events: IncomingEvent[] = [
      { ...base(), eventId: "nul-ok-1" },
      { ...base(), type: "tool_call", tool: "Re\u0000ad", autonomyLevel: "manual", eventId: "nul-bad" },
      ...Array.from({ length: 120 }, (_, i): IncomingEvent => ({ ...base(), eventId: `nul-ok-${i + 2}` })),
    ];
    const result = await ingestEvents(database.db, events, NOW);
    expect(result.accepted).toBe(121);
    expect(result.rejected).toEqual([{ index: 1, reason: "tool: must not contain the NUL character (U+0000)" }]);
    expect((await storedIds("nul-")).length).toBe(121);
  });

  it.each(PATHS)(
    "stores OTLP token points of one collection as one row, each point claimed: a re-batched retry adds only what is new (%s)",
    async (path) => {
      // More than 100 collections of four points each, so that the COPY path is taken where it can be.
      const point = (c: number, type: number): EventRow =>
        validated(
          {
            ...base(),
            type: "model_usage",
            time: `2026-03-02T10:00:${String(c % 60).padStart(2, "0")}.${String(c).padStart(3, "0")}Z`,
            modelId: "m",
            modelTier: "standard",
            inputTokens: type === 0 ? 1000 + c : 0,
            outputTokens: type === 1 ? 300 : 0,
            cacheReadTokens: type === 2 ? 5000 : 0,
            cacheWriteTokens: type === 3 ? 700 : 0,
            eventId: `${path}-points-${c}-${type}`,
          },
          { source: "otlp_metric" },
        );
      const collections = 120;
      const first = Array.from({ length: collections }, (_, c) => [0, 1, 2, 3].map((t) => point(c, t))).flat();
      expect(await store(first, path)).toBe(4 * collections);
      const rowsOf = async () =>
        (
          await sql<{ n: number; input: number; output: number; read: number; write: number }>`
            select count(*)::int as n, sum(input_tokens)::float8 as input, sum(output_tokens)::float8 as output,
              sum(cache_read_tokens)::float8 as read, sum(cache_write_tokens)::float8 as write
            from analytics_events where org_id = ${orgId} and event_id like ${`${path}-points-%`}`.execute(database.db)
        ).rows[0]!;
      const sums = (n: number) => ({
        input: 1000 * n + (n * (n - 1)) / 2,
        output: 300 * n,
        read: 5000 * n,
        write: 700 * n,
      });
      expect(await rowsOf()).toEqual({ n: collections, ...sums(collections) });
      const claims = await sql<{ n: number }>`
        select count(*)::int as n from analytics_event_ids where org_id = ${orgId} and event_id like ${`${path}-points-%`}`.execute(
        database.db,
      );
      expect(claims.rows[0]!.n).toBe(4 * collections);
      // The same points again, split differently (each collection's output and cache points
      // alone), beside a new collection's: only the new one's four points are stored.
      const again = [...first.filter((_, i) => i % 4 !== 0), ...[0, 1, 2, 3].map((t) => point(collections, t))];
      expect(await store(again, path)).toBe(4);
      expect(await rowsOf()).toEqual({ n: collections + 1, ...sums(collections + 1) });
    },
  );

  it("ingests through ingestEvents with duplicates counted", async () => {
    const events = Array.from({ length: 150 }, (_, i): IncomingEvent => ({ ...base(), eventId: `ingest-${i % 140}` }));
    expect(await ingestEvents(database.db, events, NOW)).toEqual({ accepted: 140, duplicates: 10, rejected: [] });
    expect(await ingestEvents(database.db, events, NOW)).toEqual({ accepted: 0, duplicates: 150, rejected: [] });
  });
});

describe("claims stored before migration 0008", () => {
  let database: TestDatabase<Database>;

  afterAll(async () => {
    await database?.drop();
  });

  it("still make resent events duplicates after the claims are re-keyed", async () => {
    const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0008"));
    database = await createTestDatabase<Database>(before);
    const orgId = (await createOrganization(database.db, { name: "Old layout" })).id;
    const userId = (await createUser(database.db, { orgId, email: "old@example.test", role: "owner" })).id;
    const events = Array.from(
      { length: 150 },
      (_, i): IncomingEvent => ({
        type: "git_commit",
        time: "2026-03-02T10:00:00Z",
        orgId,
        userId,
        client: "web",
        eventId: `old-${i}`,
      }),
    );
    // Stored by the previous release's statement shape: claims keyed (org_id, event_id).
    await database.db.transaction().execute(async (trx) => {
      await createMissingPartitions(trx, ["2026-03"]);
      await sql`insert into analytics_event_ids (org_id, event_id) select ${orgId}, 'old-' || i from generate_series(0, 99) as i`.execute(
        trx,
      );
      await sql`insert into analytics_events (org_id, occurred_at, user_id, client, type, event_id)
        select ${orgId}, '2026-03-02T10:00:00Z', ${userId}, 'web', 'git_commit', 'old-' || i from generate_series(0, 99) as i`.execute(
        trx,
      );
    });
    await migrateToLatest(database.db, migrations, testLogger());
    expect(await ingestEvents(database.db, events, NOW)).toEqual({ accepted: 50, duplicates: 100, rejected: [] });
    const n = await sql<{
      n: number;
      ids: number;
    }>`select count(*)::int as n, count(distinct event_id)::int as ids from analytics_events where org_id = ${orgId}`.execute(
      database.db,
    );
    expect(n.rows[0]).toEqual({ n: 150, ids: 150 });
  }, 60_000);
});
