// Session paging over Postgres' MVCC snapshot (list-queries.ts): a write to one session does not
// wait for a write to another session of the organization (the list clock it replaced made every
// write wait for the previous one's commit), and a listing still sees exactly what its first page
// saw, also of a change that was in flight while that page was read.
import { createClient, type Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionService } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { sessionServiceDeps } from "../../test/support/session-deps.js";
import { handlerTransport } from "../../test/support/handlers.js";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { createOrganization, createUser } from "../organization/queries.js";
import { createSessionService } from "./handlers.js";
import { insertSession, lockSession, touchSession, writeTime } from "./session-queries.js";
import type { SessionRow } from "./tables.js";

// Two transactions at once need a real server: the embedded database runs one at a time.
describe.skipIf(!process.env.TEST_DATABASE_URL)("session list snapshots", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  let api: Client<typeof SessionService>;
  let a: SessionRow, b: SessionRow, c: SessionRow;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    const db = database.db;
    orgId = (await createOrganization(db, { name: "Snapshots" })).id;
    const userId = (await createUser(db, { orgId, email: "owner@snapshots.test", role: "owner" })).id;
    const deps = sessionServiceDeps(db);
    api = createClient(
      SessionService,
      handlerTransport((router) => router.service(SessionService, createSessionService(deps)), {
        orgId,
        userId,
        role: "owner",
      }),
    );
    const session = (minutesAgo: number) =>
      insertSession(db, {
        orgId,
        userId,
        parentSessionId: null,
        title: null,
        computerId: null,
        settings: {},
        client: "web",
        autonomyMode: "manual",
        createdAt: new Date(Date.now() - minutesAgo * 60_000),
      });
    a = await session(60);
    b = await session(50);
    c = await session(40);
  });
  afterAll(() => database?.drop());

  it("lets writes to different sessions proceed side by side, and pages over what the first page saw", async () => {
    const ids = (page: { sessions: { sessionId: string }[] }) => page.sessions.map((s) => s.sessionId);
    expect(ids(await api.listSessions({ limit: "100" }))).toEqual([c.id, b.id, a.id]);

    // A transaction moves session a to the top and stays open...
    let commit!: () => void;
    const open = new Promise<void>((resolve) => (commit = resolve));
    let moved!: () => void;
    const hasMoved = new Promise<void>((resolve) => (moved = resolve));
    const writer = database.db.transaction().execute(async (trx) => {
      const row = (await lockSession(trx, orgId, a.id))!;
      await touchSession(trx, row, writeTime(row), { title: "moved" });
      moved();
      await open;
    });
    await hasMoved;

    // ...while a message to session b goes through (it used to wait for that commit).
    const timeout = new Promise<string>((resolve) => setTimeout(() => resolve("still waiting after 5 s"), 5_000));
    expect(await Promise.race([api.postMessage({ sessionId: b.id, text: "hello" }), timeout])).toMatchObject({
      status: "pending",
    });

    // A listing begins now: it sees b's message, not a's move, which is still in flight.
    const page1 = await api.listSessions({ limit: "1" });
    expect(ids(page1)).toEqual([b.id]);
    commit();
    await writer;

    // The rest of the listing keeps a where the first page saw it, and shows its current fields.
    const page2 = await api.listSessions({ limit: "100", cursor: page1.pagination!.nextCursor });
    expect(ids(page2)).toEqual([c.id, a.id]);
    expect(page2.sessions[1]!.title).toBe("moved");
    expect(page2.pagination).toMatchObject({ hasMore: false, nextCursor: "" });
    // A fresh listing shows the new order: a's updatedAt is when its write took the row, before b's.
    expect(ids(await api.listSessions({ limit: "100" }))).toEqual([b.id, a.id, c.id]);
  });
});
