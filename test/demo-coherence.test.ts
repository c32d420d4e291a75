// The demo tells one story across areas, read as a client reads it (the REST edge, the demo
// owner's API key): the sessions the sessions API lists are the sessions analytics counts (same
// days, same messages), users joined before they worked and have signed in, titles vary,
// sessions run on the demo's computers, and each repository has a readiness history.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addDays, dayOf } from "../services/analytics/dates.js";
import { ensureDemoOrganization, writeDemoData } from "../services/demo.js";
import { api } from "./support/fixtures.js";
import { startTestServer, type TestServer } from "./support/server.js";

const DAYS = 30;
const DAY_MS = 86_400_000;

interface SessionItem {
  sessionId: string;
  messageCount: number;
  createdAt: number;
  title?: string;
  computerId?: string;
}

describe("the demo's story", () => {
  let server: TestServer;
  let key: string;
  let orgId: string;
  const yesterday = addDays(dayOf(Date.now()), -1);
  const first = addDays(yesterday, -(DAYS - 1));
  const range = `startDate=${first}&endDate=${yesterday}`;

  const get = async (path: string) => {
    const res = await api(server.restUrl, key, path);
    expect(res.status, `${path}: ${res.text}`).toBe(200);
    return res.json;
  };

  /** Every item of a cursor-paged v0 list. */
  const all = async <T>(path: string, field: string): Promise<T[]> => {
    const items: T[] = [];
    let cursor = "";
    for (;;) {
      const page = await get(`${path}?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
      items.push(...page[field]);
      if (!page.pagination.hasMore) return items;
      cursor = page.pagination.nextCursor;
    }
  };

  let sessions: SessionItem[];
  let users: { id: string; role: string; createdAt: string; lastSignInAt?: string }[];
  let userDays: { user_id: string; date: string; sessions: number; messages: number }[];

  beforeAll(async () => {
    server = await startTestServer();
    const demo = await ensureDemoOrganization(server.platform.db);
    orgId = demo.orgId;
    key = demo.apiKey!;
    await writeDemoData(server.platform.db, orgId, { days: DAYS, users: 12 });
    sessions = await all<SessionItem>("/api/v0/sessions", "sessions");
    users = await all("/api/v0/organization/users", "users");
    userDays = [];
    let cursor = "";
    for (;;) {
      const page = await get(`/api/v1/analytics/users?${range}&limit=100${cursor ? `&cursor=${cursor}` : ""}`);
      userDays.push(...page.data);
      if (!page.meta.has_more) break;
      cursor = page.meta.next_cursor;
    }
  }, 300_000);
  afterAll(() => server?.close());

  it("has sessions and activity to compare", () => {
    expect(sessions.length).toBeGreaterThan(100);
    expect(userDays.length).toBeGreaterThan(50);
  });

  it("lists, day by day, the sessions and messages analytics counts", async () => {
    const activity: { date: string; sessions: number; messages: number }[] = (
      await get(`/api/v1/analytics/activity?${range}`)
    ).data;
    const listed = new Map<string, { sessions: number; messages: number }>();
    for (const s of sessions) {
      const day = dayOf(s.createdAt);
      if (day < first || day > yesterday) continue;
      const d = listed.get(day) ?? { sessions: 0, messages: 0 };
      d.sessions += 1;
      d.messages += s.messageCount;
      listed.set(day, d);
    }
    const counted = new Map(
      activity.filter((a) => a.sessions > 0).map((a) => [a.date, { sessions: a.sessions, messages: a.messages }]),
    );
    expect(counted.size).toBeGreaterThan(10);
    expect(Object.fromEntries(listed)).toEqual(Object.fromEntries(counted));
    // The per-user rows add up to the same.
    const perUser = new Map<string, { sessions: number; messages: number }>();
    for (const r of userDays.filter((r) => r.sessions > 0)) {
      const d = perUser.get(r.date) ?? { sessions: 0, messages: 0 };
      d.sessions += r.sessions;
      d.messages += r.messages;
      perUser.set(r.date, d);
    }
    expect(Object.fromEntries(perUser)).toEqual(Object.fromEntries(counted));
  });

  it("counts in analytics exactly the sessions the sessions API holds: same IDs, days and message counts", async () => {
    // The analytics API answers per day, not per session: its stored events are what it counts.
    const counted = await server.platform.db
      .selectFrom("analytics_events")
      .select((eb) => [
        "session_id",
        eb.fn.min("occurred_at").filterWhere("type", "=", "session_start").as("started"),
        eb.fn.countAll<number>().filterWhere("type", "=", "message").as("messages"),
      ])
      .where("org_id", "=", orgId)
      .where("session_id", "is not", null)
      .groupBy("session_id")
      .execute();
    const fromAnalytics = Object.fromEntries(
      counted.map((c) => [
        c.session_id,
        { day: c.started && dayOf(new Date(c.started)), messages: Number(c.messages) },
      ]),
    );
    const fromSessions = Object.fromEntries(
      sessions.map((s) => [s.sessionId, { day: dayOf(s.createdAt), messages: s.messageCount }]),
    );
    expect(Object.keys(fromSessions).length).toBe(sessions.length);
    expect(fromSessions).toEqual(fromAnalytics);
    // The newest waits for a runner: asked minutes ago, not yet answered.
    const recent = sessions.filter((s) => s.createdAt > Date.now() - 3_600_000);
    expect(recent).toHaveLength(1);
    const pending = await get(`/api/v0/sessions/${recent[0]!.sessionId}`);
    expect(pending).toMatchObject({ status: "pending", messageCount: 1 });
  });

  it("has users who joined before they first worked, and who have signed in since", () => {
    const activeDays = new Map<string, string[]>();
    for (const r of userDays.filter((r) => r.sessions > 0 || r.messages > 0))
      activeDays.set(r.user_id, [...(activeDays.get(r.user_id) ?? []), r.date].sort());
    expect(activeDays.size).toBeGreaterThan(5);
    const now = Date.now();
    for (const u of users) {
      const created = Date.parse(u.createdAt);
      expect(u.lastSignInAt, `${u.id} has signed in`).toBeDefined();
      const signedIn = Date.parse(u.lastSignInAt!);
      expect(signedIn).toBeGreaterThan(created);
      expect(signedIn).toBeLessThanOrEqual(now);
      const days = activeDays.get(u.id);
      if (!days) continue;
      expect(created, `${u.id} joined before working`).toBeLessThan(Date.parse(`${days[0]}T00:00:00Z`));
      // Signed in before the last session, on its day (or later: today's waiting session).
      expect(dayOf(signedIn) >= days.at(-1)!).toBe(true);
    }
    // Not all on one day: the team grew over months.
    expect(new Set(users.map((u) => dayOf(Date.parse(u.createdAt)))).size).toBeGreaterThan(users.length / 2);
    // Guests read but never work in sessions.
    for (const u of users.filter((u) => u.role === "guest")) expect(activeDays.has(u.id)).toBe(false);
  });

  it("gives the sessions varied titles", () => {
    const counts = new Map<string, number>();
    for (const s of sessions) counts.set(s.title ?? "", (counts.get(s.title ?? "") ?? 0) + 1);
    expect(counts.has("")).toBe(false);
    expect(counts.size).toBeGreaterThan(0.9 * sessions.length);
    expect(Math.max(...counts.values())).toBeLessThanOrEqual(2);
  });

  it("runs sessions on the demo's computers, after each was set up", async () => {
    const computers = await all<{ id: string; name: string; createdAt: number; status: string }>(
      "/api/v0/computers",
      "computers",
    );
    const byId = new Map(computers.map((c) => [c.id, c]));
    const onComputers = sessions.filter((s) => s.computerId);
    expect(onComputers.length).toBeGreaterThan(0.15 * sessions.length);
    for (const s of onComputers) {
      const computer = byId.get(s.computerId!);
      expect(computer, `${s.sessionId}'s computer exists`).toBeDefined();
      expect(computer!.status).toBe("active");
      expect(computer!.createdAt).toBeLessThan(s.createdAt);
    }
    expect(new Set(onComputers.map((s) => s.computerId)).size).toBeGreaterThanOrEqual(2);
    // The computer filter of the sessions list finds them.
    const first = onComputers[0]!.computerId!;
    const filtered = await get(`/api/v0/sessions?limit=100&computerId=${first}`);
    expect(filtered.sessions.every((s: SessionItem) => s.computerId === first)).toBe(true);
    expect(filtered.sessions.length).toBeGreaterThan(0);
  });

  it("has a readiness history for each repository: several reports over the period", async () => {
    const reports: { reportId: string; createdAt: number; repoUrl: string }[] = [];
    let after = "";
    for (;;) {
      const page = (
        await get(`/api/organization/maturity-level-reports?limit=100${after ? `&startAfter=${after}` : ""}`)
      ).reports;
      reports.push(...page);
      if (page.length < 100) break;
      after = page.at(-1).reportId;
    }
    const byRepository = new Map<string, number[]>();
    for (const r of reports) byRepository.set(r.repoUrl, [...(byRepository.get(r.repoUrl) ?? []), r.createdAt]);
    expect(byRepository.size).toBeGreaterThanOrEqual(3);
    for (const [url, times] of byRepository) {
      expect(times.length, url).toBeGreaterThanOrEqual(3);
      expect(Math.max(...times) - Math.min(...times), url).toBeGreaterThan(7 * DAY_MS);
      expect(Math.max(...times)).toBeLessThan(Date.now());
    }
  });
});
