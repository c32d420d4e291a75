// The dashboard (GET / on the REST port) in Debian's headless Chromium against the real server
// with the demo data `npm start` writes: the key form, the date range and its rules, the charts'
// data points against the API's own answers, the users table's pages and sorting, the member's
// 403, live session status, keyboard reach, and no console errors. Skipped, saying so, where
// /usr/bin/chromium is absent (.ci/run installs it).
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type Browser, CHROMIUM, chromiumMissing, launchChromium } from "./chromium.js";
import {
  dashboardDebug,
  focusedControl,
  PANELS,
  panelStates,
  panelsSettled,
  signIn,
  storedKey,
} from "./dashboard-page.js";
import { type DemoServer, startDemoServer } from "./demo-server.js";

if (chromiumMissing)
  console.warn(`test/browser/dashboard.test.ts skipped: no Chromium at ${CHROMIUM} (apt-get install chromium)`);

const ANALYTICS_PANELS = [
  "credits",
  "active-users",
  "active-by-client",
  "top-tools",
  "top-mcp-servers",
  "productivity",
  "users",
];

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const addDays = (day: string, n: number) => dayOf(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000);
const yesterday = () => addDays(dayOf(Date.now()), -1);

interface ChartData {
  days: string[];
  series: { label: string; values: number[] }[];
}

// A test drives several page loads of a few seconds each; on a loaded machine (the whole suite on
// two cores) they take longer than the suite's default 30 s allows.
describe.skipIf(chromiumMissing)("dashboard in headless Chromium", { timeout: 120_000 }, () => {
  let demo: DemoServer;
  let browser: Browser;
  let page: Page;
  let consoleErrors: string[];

  /** The API's answer, fetched by the test itself with the owner's key. */
  async function api<T>(path: string, key = demo.ownerKey, init: RequestInit = {}): Promise<T> {
    const response = await fetch(`${demo.server.restUrl}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers },
    });
    expect(response.ok, `${path}: ${response.status}`).toBe(true);
    return (await response.json()) as T;
  }

  const chart = (id: string) => dashboardDebug<ChartData | undefined>(page, `charts[${JSON.stringify(id)}]`);

  beforeAll(async () => {
    demo = await startDemoServer();
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await demo?.close();
  });

  beforeEach(async () => {
    consoleErrors = [];
    page = await browser.context.newPage();
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(message.text());
    });
    page.on("pageerror", (err) => consoleErrors.push(String(err)));
    await page.goto(demo.url);
  });

  afterEach(async () => {
    // A new page of the same context shares sessionStorage per tab only: each test starts signed out.
    await page.close();
  });

  it("serves the built page from the REST port, its assets hashed and nothing from another origin", async () => {
    const requested: string[] = [];
    page.on("request", (r) => requested.push(r.url()));
    await page.reload();
    await signIn(page, demo.ownerKey);
    await panelsSettled(page);
    const origin = new URL(demo.url).origin;
    expect(requested.filter((u) => !u.startsWith(origin))).toEqual([]);
    const assets = requested.filter((u) => u.startsWith(`${origin}/assets/`));
    expect(assets.some((u) => /\/assets\/index-[\w-]{6,}\.js$/.test(u))).toBe(true);
    // The key travels in the header only, never in a URL.
    expect(requested.filter((u) => u.includes(demo.ownerKey))).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it("keeps the key for the tab, shows every panel with the demo data, and the lag", async () => {
    await signIn(page, demo.ownerKey);
    await panelsSettled(page);
    expect(await panelStates(page)).toEqual(Object.fromEntries(PANELS.map((id) => [id, "ready"])));
    expect(await storedKey(page)).toBe(demo.ownerKey);
    // The default range ends yesterday, the newest day the API serves, which may still change.
    await expect.poll(() => page.inputValue("#range-end")).toBe(yesterday());
    expect(await page.getAttribute("#range-end", "max")).toBe(yesterday());
    const lag = page.locator("#lag-note");
    expect(await lag.getAttribute("data-provisional")).toBe("true");
    expect(await lag.textContent()).toContain(`available through ${yesterday()}`);
    // A reload keeps the key (sessionStorage): no second prompt.
    await page.reload();
    await panelsSettled(page);
    expect(await page.isVisible("#key-gate")).toBe(false);
    expect(consoleErrors).toEqual([]);
  });

  it("draws credits by model as the API answers them, and follows a change of range", async () => {
    await signIn(page, demo.ownerKey);
    await panelsSettled(page);
    const expectCreditsOf = async (start: string, end: string) => {
      const answer = await api<{ data: { date: string; group_key: string; billable_tokens: number }[] }>(
        `/api/v1/analytics/tokens?startDate=${start}&endDate=${end}&group_by=model`,
      );
      const drawn = await chart("credits");
      expect(drawn?.days[0]).toBe(start);
      expect(drawn?.days.at(-1)).toBe(end);
      const points = new Map<string, number>();
      for (const s of drawn!.series)
        s.values.forEach((v, i) => {
          if (v !== 0) points.set(`${drawn!.days[i]} ${s.label}`, v);
        });
      const expected = new Map(
        answer.data.filter((r) => r.billable_tokens !== 0).map((r) => [`${r.date} ${r.group_key}`, r.billable_tokens]),
      );
      expect(expected.size).toBeGreaterThan(0);
      expect(points).toEqual(expected);
    };
    const end = yesterday();
    await expectCreditsOf(await page.inputValue("#range-start"), end);

    // A preset applies at once.
    await page.selectOption("#range-preset", "7");
    await expect.poll(async () => (await chart("credits"))?.days.length).toBe(7);
    await panelsSettled(page);
    await expectCreditsOf(addDays(end, -6), end);

    // A custom range ending before yesterday has no provisional day.
    const customEnd = addDays(end, -3);
    const customStart = addDays(end, -12);
    await page.fill("#range-start", customStart);
    await page.fill("#range-end", customEnd);
    expect(await page.inputValue("#range-preset")).toBe("custom");
    await page.getByRole("button", { name: "Apply" }).click();
    await expect.poll(async () => (await chart("credits"))?.days.at(-1)).toBe(customEnd);
    await panelsSettled(page);
    await expectCreditsOf(customStart, customEnd);
    expect(await page.getAttribute("#lag-note", "data-provisional")).toBe("false");
    expect(consoleErrors).toEqual([]);
  });

  it("draws active users, productivity and the top tools as the API answers them", async () => {
    await signIn(page, demo.ownerKey);
    await panelsSettled(page);
    const start = await page.inputValue("#range-start");
    const end = await page.inputValue("#range-end");
    const range = `startDate=${start}&endDate=${end}`;

    const activity = await api<{ data: { date: string; daily_active_users: number; monthly_active_users: number }[] }>(
      `/api/v1/analytics/activity?${range}`,
    );
    const users = (await chart("active-users"))!;
    const daily = users.series.find((s) => s.label === "Daily")!.values;
    const monthly = users.series.find((s) => s.label === "Monthly")!.values;
    for (const row of activity.data) {
      const i = users.days.indexOf(row.date);
      expect([daily[i], monthly[i]]).toEqual([row.daily_active_users, row.monthly_active_users]);
    }

    const byClient = await api<{ data: { date: string; group_key: string; daily_active_users: number }[] }>(
      `/api/v1/analytics/activity?${range}&group_by=client`,
    );
    const clients = (await chart("active-by-client"))!;
    for (const row of byClient.data) {
      const values = clients.series.find((s) => s.label === row.group_key)!.values;
      expect(values[clients.days.indexOf(row.date)]).toBe(row.daily_active_users);
    }

    const productivity = await api<{ data: { date: string; git_commits: number }[] }>(
      `/api/v1/analytics/productivity?${range}`,
    );
    const drawn = (await chart("productivity"))!;
    const commits = drawn.series.find((s) => s.label === "Commits")!.values;
    expect(productivity.data.map((r) => commits[drawn.days.indexOf(r.date)])).toEqual(
      productivity.data.map((r) => r.git_commits),
    );

    const tools = await api<{ data: { date: string; group_key: string; tool_calls: number }[] }>(
      `/api/v1/analytics/tools?${range}&group_by=tool_name`,
    );
    const totals = new Map<string, number>();
    for (const r of tools.data) totals.set(r.group_key, (totals.get(r.group_key) ?? 0) + r.tool_calls);
    const shown = await dashboardDebug<{ label: string; value: number }[]>(page, `lists["top-tools"].items`);
    expect(shown.length).toBeGreaterThan(0);
    const largest = Math.max(...totals.values());
    expect(shown[0]!.value).toBe(largest);
    for (const item of shown) expect(item.value).toBe(totals.get(item.label));
    expect(await page.locator("#top-tools li").count()).toBe(shown.length);
    expect(consoleErrors).toEqual([]);
  });

  it("pages the users table through the API's cursor and sorts a page by a column", async () => {
    await signIn(page, demo.ownerKey);
    await panelsSettled(page);
    const start = await page.inputValue("#range-start");
    const end = await page.inputValue("#range-end");
    await page.getByLabel("Users per page").selectOption("5");
    await panelsSettled(page);
    const shownUsers = async () => (await page.locator("#users-table tbody th").allTextContents()).sort();
    const apiPage = async (cursor?: string) => {
      const answer = await api<{
        data: { user_id: string; user_email: string | null }[];
        meta: { next_cursor?: string; has_more?: boolean };
      }>(`/api/v1/analytics/users?startDate=${start}&endDate=${end}&limit=5${cursor ? `&cursor=${cursor}` : ""}`);
      return { users: [...new Set(answer.data.map((r) => r.user_email ?? r.user_id))].sort(), meta: answer.meta };
    };
    const first = await apiPage();
    expect(first.meta.has_more).toBe(true);
    expect(await shownUsers()).toEqual(first.users);
    expect(await page.textContent("#users-page")).toBe("Page 1");

    await page.getByRole("button", { name: "Next page" }).click();
    await expect.poll(() => page.textContent("#users-page")).toBe("Page 2");
    const second = await apiPage(first.meta.next_cursor);
    expect(await shownUsers()).toEqual(second.users);
    expect(second.users).not.toEqual(first.users);

    await page.getByRole("button", { name: "Previous page" }).click();
    await expect.poll(() => page.textContent("#users-page")).toBe("Page 1");
    expect(await shownUsers()).toEqual(first.users);
    expect(await page.isDisabled("#users-prev")).toBe(true);

    // Credits sort largest first by default; one click sorts smallest first.
    const credits = async () =>
      await page
        .locator("#users-table tbody td:nth-child(2)")
        .evaluateAll((cells) => cells.map((c) => Number(c.getAttribute("data-value"))));
    const before = await credits();
    expect(before).toEqual([...before].sort((a, b) => b - a));
    await page.locator('#users-table th[data-key="credits"] button').click();
    const after = await credits();
    expect(after).toEqual([...before].sort((a, b) => a - b));
    expect(await page.getAttribute('#users-table th[data-key="credits"]', "aria-sort")).toBe("ascending");
    expect(consoleErrors).toEqual([]);
  });

  it("lists readiness by repository as the reports say", async () => {
    await signIn(page, demo.ownerKey);
    await panelsSettled(page);
    const { reports } = await api<{ reports: { repoUrl: string; score: number; createdAt: number }[] }>(
      "/api/organization/maturity-level-reports?limit=100",
    );
    const latest = new Map<string, number>();
    for (const r of [...reports].sort((a, b) => a.createdAt - b.createdAt)) latest.set(r.repoUrl, r.score);
    const rows = await page
      .locator("#readiness-table tbody tr")
      .evaluateAll((trs) =>
        trs.map((tr) => [tr.getAttribute("data-repo"), Number(tr.getAttribute("data-score"))] as const),
      );
    expect(new Map(rows)).toEqual(latest);
    expect(consoleErrors).toEqual([]);
  });

  it("follows a session's status live from its event stream", async () => {
    const created = await api<{ sessionId: string; status: string }>("/api/v0/sessions", demo.ownerKey, {
      method: "POST",
      body: JSON.stringify({ title: "Live status from the browser test", text: "Waiting for a runner" }),
    });
    expect(created.status).toBe("pending");
    await signIn(page, demo.ownerKey);
    await panelsSettled(page);
    const row = page.locator(`#sessions-table tr[data-session="${created.sessionId}"]`);
    expect(await row.getAttribute("data-status")).toBe("pending");
    await expect.poll(() => page.getAttribute("#sessions-live", "data-streams")).not.toBe("0");
    // Its stream is open: from here on each change arrives as an event.
    await row.and(page.locator("[data-live]")).waitFor();
    await api(`/api/v0/sessions/${created.sessionId}/interrupt`, demo.ownerKey, { method: "POST", body: "{}" });
    // No reload and well before the 30 s refresh: the event stream brings the change.
    await expect.poll(() => row.getAttribute("data-status"), { timeout: 10_000 }).toBe("idle");
    expect(consoleErrors).toEqual([]);
  });

  it("shows an empty range as empty, and refuses a range the API would refuse without asking it", async () => {
    await signIn(page, demo.ownerKey);
    await panelsSettled(page);
    await page.fill("#range-start", "2026-01-14");
    await page.fill("#range-end", "2026-01-20");
    await page.getByRole("button", { name: "Apply" }).click();
    await expect.poll(() => page.getAttribute("#credits", "data-state")).toBe("empty");
    await panelsSettled(page);
    expect(await page.textContent("#credits .panel-status")).toContain("No credits");

    const requests: string[] = [];
    page.on("request", (r) => requests.push(r.url()));
    await page.fill("#range-end", dayOf(Date.now()));
    await page.getByRole("button", { name: "Apply" }).click();
    expect(await page.textContent("#range-error")).toContain("24 hours");
    expect(await page.getAttribute("#range-end", "aria-invalid")).toBe("true");
    await page.fill("#range-start", "2026-01-14");
    await page.fill("#range-end", "2027-01-20");
    await page.getByRole("button", { name: "Apply" }).click();
    expect(await page.isVisible("#range-error")).toBe(true);
    expect(requests).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it("shows a member's key the 403 on every analytics panel, with its own sessions still shown", async () => {
    await signIn(page, demo.memberKey);
    await panelsSettled(page);
    const states = await panelStates(page);
    for (const id of ANALYTICS_PANELS) expect(states[id], id).toBe("forbidden");
    expect(await page.textContent("#credits .panel-status")).toContain("403");
    // Said once for the page, with the API's reason.
    expect(await page.textContent("#access-note")).toContain("requires the owner or manager role");
    expect(states.sessions).toBe("empty");
    // A 403 answer is the API's, not the page's: Chromium logs failed loads, which are expected here.
    expect(consoleErrors.filter((e) => !e.includes("403"))).toEqual([]);
  });

  it("sends a refused key back to the key form with the API's reason", async () => {
    await signIn(page, "apk_not-a-real-key");
    await expect.poll(() => page.isVisible("#key-gate")).toBe(true);
    expect(await page.textContent("#key-error")).toContain("401");
    expect(await storedKey(page)).toBeNull();
    expect(consoleErrors.filter((e) => !e.includes("401"))).toEqual([]);
  });

  it("reaches every control by keyboard, each with a label", async () => {
    // The key form: Tab reaches the labelled input, Enter submits.
    await page.keyboard.press("Tab");
    const focusedLabel = () => focusedControl(page);
    let guard = 0;
    while (!(await focusedLabel())?.startsWith("api-key") && guard++ < 5) await page.keyboard.press("Tab");
    expect(await focusedLabel()).toBe("api-key: API key");
    await page.keyboard.type(demo.ownerKey);
    await page.keyboard.press("Enter");
    await panelsSettled(page);

    // Tab through the page (a date field takes a stop per part; the order wraps at the end).
    const reached: string[] = [];
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press("Tab");
      const label = await focusedLabel();
      if (label !== undefined && !reached.includes(label)) reached.push(label);
    }
    for (const control of [
      "forget-key: Forget key",
      "range-preset: Range",
      "range-start: From (UTC)",
      "range-end: To (UTC)",
      "users-page-size: Users per page",
      "users-next: Next page",
    ])
      expect(reached).toContain(control);
    expect(reached.some((l) => l.startsWith("button: Credits"))).toBe(true);
    // Every control reached says what it is.
    for (const label of reached) expect(label.split(": ")[1], label).not.toBe("");

    // The preset changes by keyboard alone.
    await page.focus("#range-preset");
    await page.keyboard.press("ArrowUp");
    await expect.poll(() => page.inputValue("#range-preset")).toBe("7");
    await expect.poll(async () => (await chart("credits"))?.days.length).toBe(7);
    expect(consoleErrors).toEqual([]);
  });
});
