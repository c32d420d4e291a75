// The event stream's mechanics against a real Postgres: LISTEN wake-ups across connections
// (event-wakeups.ts), heartbeats when quiet, polling without a listener, and the end of a stream
// when its session is deleted or its signal aborts (event-stream.ts).
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, testLogger, type TestDatabase } from "../../test/support/database.js";
import { createTestOrg, createTestUser } from "../../test/support/fixtures.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { newId } from "../platform/ids.js";
import { SESSION_EVENTS_CHANNEL } from "./event-queries.js";
import { sessionEventStream, type StreamItem } from "./event-stream.js";
import { createSessionWakeups } from "./event-wakeups.js";
import { deleteSession, insertSession, lockSession, touchSession, writeTime } from "./session-queries.js";

describe("session event streams", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  let userId: string;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    orgId = await createTestOrg(database.db);
    userId = (await createTestUser(database.db, orgId, "member")).userId;
  });
  afterAll(() => database?.drop());

  const newSession = () =>
    insertSession(database.db, {
      orgId,
      userId,
      parentSessionId: null,
      title: null,
      computerId: null,
      settings: {},
      client: "web",
      autonomyMode: "manual",
    });
  /** A status change, as a handler makes it: under the row lock, through touchSession. */
  const setStatus = (id: string, status: "idle" | "pending" | "running") =>
    database.db.transaction().execute(async (trx) => {
      const locked = (await lockSession(trx, orgId, id))!;
      await touchSession(trx, locked, writeTime(locked), { status });
    });
  async function next(items: AsyncGenerator<StreamItem>, ms: number) {
    const started = performance.now();
    const r = await Promise.race([items.next(), new Promise<"timeout">((r) => setTimeout(() => r("timeout"), ms))]);
    return { r, ms: performance.now() - started };
  }

  it("a notification on another connection wakes a waiting subscriber at once", async () => {
    const wakeups = createSessionWakeups({ url: database.url, logger: testLogger() });
    const id = newId();
    const w = wakeups.subscribe(id);
    const signal = new AbortController().signal;
    try {
      // The first wait returns at once (nothing read yet); then wait for the listener to be live.
      await w.wait(10, signal);
      for (let i = 0; i < 100 && !w.listening(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(w.listening()).toBe(true);
      await w.wait(10, signal); // the "connected" gap
      const started = performance.now();
      setTimeout(() => void sql`select pg_notify(${SESSION_EVENTS_CHANNEL}, ${id})`.execute(database.db), 100);
      await w.wait(10_000, signal);
      const waited = performance.now() - started;
      expect(waited).toBeGreaterThanOrEqual(90);
      expect(waited).toBeLessThan(2_000);
    } finally {
      w.close();
    }
  });

  it("streams the events after a position, then new ones; heartbeats when quiet; ends when the session is deleted", async () => {
    const session = await newSession();
    await setStatus(session.id, "pending");
    const wakeups = createSessionWakeups({ url: database.url, logger: testLogger() });
    const items = sessionEventStream({
      db: database.db,
      wakeups,
      sessionId: session.id,
      afterSeq: 0,
      signal: new AbortController().signal,
      heartbeatMs: 400,
    });
    const first = await next(items, 5_000);
    expect(first.r).toMatchObject({
      value: { kind: "event", event: { seq: 1, type: "session.status_changed", data: { status: "pending" } } },
    });
    expect((await next(items, 5_000)).r).toEqual({ value: { kind: "heartbeat" }, done: false });
    setTimeout(() => void setStatus(session.id, "running"), 50);
    const second = await next(items, 5_000);
    expect(second.r).toMatchObject({
      value: { kind: "event", event: { seq: 2, data: { status: "running", previousStatus: "pending" } } },
    });
    await database.db.transaction().execute(async (trx) => deleteSession(trx, session));
    expect((await next(items, 5_000)).r).toEqual({ value: undefined, done: true });
  });

  it("without a listener (the embedded database) it reads every second", async () => {
    const session = await newSession();
    const items = sessionEventStream({
      db: database.db,
      wakeups: createSessionWakeups({ url: undefined, logger: testLogger() }),
      sessionId: session.id,
      afterSeq: 0,
      signal: new AbortController().signal,
    });
    const pending = next(items, 5_000);
    await new Promise((r) => setTimeout(r, 100));
    await setStatus(session.id, "pending");
    const { r, ms } = await pending;
    expect(r).toMatchObject({ value: { kind: "event", event: { seq: 1 } } });
    expect(ms).toBeLessThan(2_500);
  });

  it("ends when its signal aborts, and gives its subscription back", async () => {
    const session = await newSession();
    const abort = new AbortController();
    const items = sessionEventStream({
      db: database.db,
      wakeups: createSessionWakeups({ url: undefined, logger: testLogger() }),
      sessionId: session.id,
      afterSeq: 0,
      signal: abort.signal,
    });
    setTimeout(() => abort.abort(), 100);
    expect((await next(items, 3_000)).r).toEqual({ value: undefined, done: true });
  });
});
