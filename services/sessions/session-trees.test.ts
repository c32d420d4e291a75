// Session trees (migration 0009): every session knows its tree's root, and GetSession and the list
// read a session's tree through it in the same statement as the session. The token usage they
// show must be what usage.ts defines: own + each held child's inclusive usage + reported children.
import { createClient, type Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionService } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { sessionServiceDeps } from "../../test/support/session-deps.js";
import { handlerTransport, rejection } from "../../test/support/handlers.js";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { createOrganization, createUser } from "../organization/queries.js";
import { createSessionService } from "./handlers.js";
import { insertSession } from "./session-queries.js";
import { ZERO_USAGE } from "./settings.js";
import type { SessionRow, StoredTokenUsage } from "./tables.js";
import { findSessionWithTree } from "./tree-queries.js";
import { usageNodesOfJson } from "./views.js";

const usage = (inputTokens: number, factoryCredits = 0): StoredTokenUsage => ({
  ...ZERO_USAGE,
  inputTokens,
  factoryCredits,
});

describe("session trees", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  let api: Client<typeof SessionService>;
  let userId: string;
  // root ─┬─ child ─── grandchild      (child also reports a client-side child "external")
  //       └─ child2
  // root2 ─── leaf
  let root: SessionRow,
    child: SessionRow,
    grandchild: SessionRow,
    child2: SessionRow,
    root2: SessionRow,
    leaf: SessionRow;

  async function session(
    parent: SessionRow | null,
    own: StoredTokenUsage,
    minutesAgo: number,
    reported?: Record<string, StoredTokenUsage>,
  ) {
    return insertSession(
      database.db,
      {
        orgId,
        userId,
        parentSessionId: parent?.id ?? null,
        title: null,
        computerId: null,
        settings: reported ? { childInclusiveTokenUsageBySessionId: reported } : {},
        client: "web",
        autonomyMode: "manual",
        createdAt: new Date(Date.now() - minutesAgo * 60_000),
      },
      { input_tokens: own.inputTokens, factory_credits: own.factoryCredits },
    );
  }

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    const db = database.db;
    orgId = (await createOrganization(db, { name: "Trees" })).id;
    userId = (await createUser(db, { orgId, email: "owner@trees.test", role: "owner" })).id;
    const deps = sessionServiceDeps(db);
    api = createClient(
      SessionService,
      handlerTransport((router) => router.service(SessionService, createSessionService(deps)), {
        orgId,
        userId,
        role: "owner",
      }),
    );
    // The list (newest first) is: child (moved to the top last), grandchild, leaf, child2, root2, root.
    root = await session(null, usage(100, 1.5), 60);
    root2 = await session(null, usage(50), 50);
    child2 = await session(root, usage(1), 40);
    leaf = await session(root2, usage(5, 0.25), 30);
    child = await session(root, usage(20), 25, { external: usage(7, 0.5) });
    grandchild = await session(child, usage(3), 20);
    await db.updateTable("sessions").set({ updated_at: new Date() }).where("id", "=", child.id).execute();
  });
  afterAll(() => database?.drop());

  it("records each session's root: itself at the top, its parent's root below", () => {
    expect([root.root_id, child.root_id, grandchild.root_id, child2.root_id]).toEqual([
      root.id,
      root.id,
      root.id,
      root.id,
    ]);
    expect([root2.root_id, leaf.root_id]).toEqual([root2.id, root2.id]);
  });

  it("reads a session with the other members of its tree only", async () => {
    const found = await findSessionWithTree(database.db, orgId, child.id);
    const tree = usageNodesOfJson(found?.tree ?? null);
    expect(found?.id).toBe(child.id);
    expect(tree.map((n) => n.id).sort()).toEqual([root.id, grandchild.id, child2.id].sort());
    const rootNode = tree.find((n) => n.id === root.id);
    expect(rootNode).toEqual({ id: root.id, parentId: null, own: usage(100, 1.5), reported: {} });
    const leafTree = (await findSessionWithTree(database.db, orgId, leaf.id))?.tree ?? null;
    expect(usageNodesOfJson(leafTree).map((n) => n.id)).toEqual([root2.id]);
    expect(await findSessionWithTree(database.db, "another-org", child.id)).toBeUndefined();
    expect(await findSessionWithTree(database.db, orgId, child.id, "another-user")).toBeUndefined();
  });

  it("refuses a parent from another organization", async () => {
    const other = (await createOrganization(database.db, { name: "Other" })).id;
    const stranger = (await createUser(database.db, { orgId: other, email: "s@other.test", role: "owner" })).id;
    const init = {
      orgId: other,
      userId: stranger,
      parentSessionId: root.id,
      title: null,
      computerId: null,
      settings: {},
      client: "web",
      autonomyMode: "manual",
    };
    await expect(insertSession(database.db, init)).rejects.toThrow(/root_id/);
  });

  const expected = () => ({
    [grandchild.id]: { inclusive: usage(3), children: {} },
    [child.id]: { inclusive: usage(30, 0.5), children: { external: usage(7, 0.5), [grandchild.id]: usage(3) } },
    [child2.id]: { inclusive: usage(1), children: {} },
    [root.id]: { inclusive: usage(131, 2), children: { [child.id]: usage(30, 0.5), [child2.id]: usage(1) } },
    [leaf.id]: { inclusive: usage(5, 0.25), children: {} },
    [root2.id]: { inclusive: usage(55, 0.25), children: { [leaf.id]: usage(5, 0.25) } },
  });

  it("shows every session's usage over its subtree through GetSession", async () => {
    for (const [id, want] of Object.entries(expected())) {
      const got = await api.getSession({ sessionId: id });
      expect(got.sessionSettings?.inclusiveTokenUsage, id).toMatchObject(want.inclusive);
      expect(got.sessionSettings?.childInclusiveTokenUsageBySessionId, id).toMatchObject(want.children);
      expect(Object.keys(got.sessionSettings!.childInclusiveTokenUsageBySessionId).sort(), id).toEqual(
        Object.keys(want.children).sort(),
      );
    }
  });

  it("shows the same usage in the list, whether or not the rest of a tree is on the page", async () => {
    const all = await api.listSessions({ limit: "100" });
    expect(all.sessions.map((s) => s.sessionId)).toEqual([
      child.id,
      grandchild.id,
      leaf.id,
      child2.id,
      root2.id,
      root.id,
    ]);
    for (const [id, want] of Object.entries(expected())) {
      const item = all.sessions.find((s) => s.sessionId === id)!;
      expect(item.sessionSettings?.inclusiveTokenUsage, id).toMatchObject(want.inclusive);
      expect(item.sessionSettings?.childInclusiveTokenUsageBySessionId, id).toMatchObject(want.children);
    }
    // Page by page: each page has only part of a tree.
    let cursor = "";
    const seen: string[] = [];
    do {
      const page = await api.listSessions({ limit: "1", cursor });
      const item = page.sessions[0]!;
      expect(item.sessionSettings?.inclusiveTokenUsage, item.sessionId).toMatchObject(
        expected()[item.sessionId]!.inclusive,
      );
      seen.push(item.sessionId);
      cursor = page.pagination!.nextCursor;
    } while (cursor !== "");
    expect(seen).toEqual(all.sessions.map((s) => s.sessionId));
  });

  it("never counts a reported entry for a child it holds", async () => {
    await database.db
      .updateTable("sessions")
      .set({ settings: JSON.stringify({ childInclusiveTokenUsageBySessionId: { [child2.id]: usage(999) } }) })
      .where("id", "=", root.id)
      .execute();
    const got = await api.getSession({ sessionId: root.id });
    expect(got.sessionSettings?.inclusiveTokenUsage).toMatchObject(usage(131, 2));
    expect(got.sessionSettings?.childInclusiveTokenUsageBySessionId[child2.id]).toMatchObject(usage(1));
    await database.db.updateTable("sessions").set({ settings: "{}" }).where("id", "=", root.id).execute();
  });

  it("answers 404 for another organization's session", async () => {
    const other = (await createOrganization(database.db, { name: "Elsewhere" })).id;
    const outsider = createClient(
      SessionService,
      handlerTransport(
        (router) => router.service(SessionService, createSessionService(sessionServiceDeps(database.db))),
        { orgId: other, role: "owner" },
      ),
    );
    expect((await rejection(outsider.getSession({ sessionId: root.id }))).rawMessage).toBe("session not found");
  });
});
