// Per-user figures for the range, a page of users at a time through /users (limit, and
// meta.next_cursor as the next page's cursor). The API gives one row per user and day; the table
// adds up each user's days. Sorting orders the page shown (the API pages by user ID).
import type { Envelope, UserDayRow } from "../api-types.js";
import { ANALYTICS, type LoadContext, rangeQuery } from "../context.js";
import { byId, h, replaceChildren } from "../dom.js";
import { formatCompact, formatWhole } from "../format.js";
import { Panel } from "../panel.js";

interface UserTotals {
  user: string;
  credits: number;
  toolCalls: number;
  sessions: number;
  messages: number;
  filesChanged: number;
  commits: number;
  pullRequests: number;
  activeDays: number;
  primaryModel: string;
}

type Column = { key: keyof UserTotals; label: string; numeric: boolean; format?: (n: number) => string };

const COLUMNS: Column[] = [
  { key: "user", label: "User", numeric: false },
  { key: "credits", label: "Credits", numeric: true, format: formatCompact },
  { key: "toolCalls", label: "Tool calls", numeric: true },
  { key: "sessions", label: "Sessions", numeric: true },
  { key: "messages", label: "Messages", numeric: true },
  { key: "filesChanged", label: "Files changed", numeric: true },
  { key: "commits", label: "Commits", numeric: true },
  { key: "pullRequests", label: "PRs", numeric: true },
  { key: "activeDays", label: "Active days", numeric: true },
  { key: "primaryModel", label: "Main model", numeric: false },
];

/** Each user's days added up, in the API's order (by user ID); the main model is the one of most credits. */
export function totalsByUser(rows: UserDayRow[]): UserTotals[] {
  const users = new Map<string, UserTotals & { models: Map<string, number> }>();
  for (const r of rows) {
    let u = users.get(r.user_id);
    if (!u) {
      u = {
        user: r.user_email ?? r.user_id,
        credits: 0,
        toolCalls: 0,
        sessions: 0,
        messages: 0,
        filesChanged: 0,
        commits: 0,
        pullRequests: 0,
        activeDays: 0,
        primaryModel: "",
        models: new Map(),
      };
      users.set(r.user_id, u);
    }
    u.credits += r.billable_tokens;
    u.toolCalls += r.tool_calls;
    u.sessions += r.sessions;
    u.messages += r.messages;
    u.filesChanged += r.files_created + r.files_edited;
    u.commits += r.git_commits;
    u.pullRequests += r.git_prs_created;
    u.activeDays += 1;
    if (r.primary_model) u.models.set(r.primary_model, (u.models.get(r.primary_model) ?? 0) + r.billable_tokens + 1);
  }
  return [...users.values()].map(({ models, ...u }) => ({
    ...u,
    primaryModel: [...models].sort((a, b) => b[1] - a[1])[0]?.[0] ?? "—",
  }));
}

/** The table's paging and sorting; survives re-renders of one range, reset by a new range. */
class UserTable {
  private cursors: (string | undefined)[] = [undefined];
  private page = 0;
  private hasMore = false;
  private rows: UserTotals[] = [];
  private sort: { key: keyof UserTotals; descending: boolean } = { key: "credits", descending: true };
  private ctx: LoadContext | undefined;
  private readonly panel = new Panel("users");

  constructor() {
    byId("users-prev").addEventListener("click", () => this.go(this.page - 1));
    byId("users-next").addEventListener("click", () => this.go(this.page + 1));
    byId<HTMLSelectElement>("users-page-size").addEventListener("change", () => this.reset());
  }

  start(ctx: LoadContext): Promise<void> {
    this.ctx = ctx;
    return this.reset();
  }

  private reset(): Promise<void> {
    this.cursors = [undefined];
    return this.go(0);
  }

  private async go(page: number): Promise<void> {
    const ctx = this.ctx;
    if (!ctx || page < 0 || page >= this.cursors.length) return;
    const limit = Number(byId<HTMLSelectElement>("users-page-size").value);
    this.setPager(true);
    await this.panel.load(
      () =>
        ctx.api.get<Envelope<UserDayRow>>(
          `${ANALYTICS}/users`,
          { ...rangeQuery(ctx), limit, cursor: this.cursors[page] },
          ctx.signal,
        ),
      (answer) => {
        this.page = page;
        this.hasMore = answer.meta.has_more === true && answer.meta.next_cursor !== undefined;
        if (this.hasMore) this.cursors[page + 1] = answer.meta.next_cursor;
        this.rows = totalsByUser(answer.data);
        if (this.rows.length === 0) return false;
        this.render();
        return true;
      },
      "No user was active in this range.",
    );
    this.setPager(false);
  }

  private setPager(busy: boolean): void {
    byId<HTMLButtonElement>("users-prev").disabled = busy || this.page === 0;
    byId<HTMLButtonElement>("users-next").disabled = busy || !this.hasMore;
    replaceChildren(byId("users-page"), this.rows.length === 0 ? "" : `Page ${this.page + 1}`);
  }

  private sorted(): UserTotals[] {
    const { key, descending } = this.sort;
    const order = descending ? -1 : 1;
    return [...this.rows].sort((a, b) => {
      const x = a[key];
      const y = b[key];
      const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return c * order || a.user.localeCompare(b.user);
    });
  }

  private sortBy(key: keyof UserTotals): void {
    const column = COLUMNS.find((c) => c.key === key)!;
    this.sort = { key, descending: this.sort.key === key ? !this.sort.descending : column.numeric };
    this.render();
    this.panel.body.querySelector<HTMLButtonElement>(`th[data-key="${key}"] button`)?.focus();
  }

  private render(): void {
    const head = h(
      "tr",
      {},
      ...COLUMNS.map((c) => {
        const active = this.sort.key === c.key;
        const direction = this.sort.descending ? "descending" : "ascending";
        const button = h(
          "button",
          { type: "button", class: "sort" },
          c.label,
          h("span", { class: "sort-mark", "aria-hidden": "true" }, active ? (this.sort.descending ? "▼" : "▲") : ""),
        );
        button.addEventListener("click", () => this.sortBy(c.key));
        return h(
          "th",
          {
            scope: "col",
            "data-key": c.key,
            class: c.numeric ? "num" : undefined,
            "aria-sort": active ? direction : "none",
          },
          button,
        );
      }),
    );
    const body = this.sorted().map((row) =>
      h(
        "tr",
        {},
        ...COLUMNS.map((c) => {
          const value = row[c.key];
          const text = typeof value === "number" ? (c.format ?? formatWhole)(value) : value;
          return c.key === "user"
            ? h("th", { scope: "row" }, text)
            : h("td", { class: c.numeric ? "num" : undefined, "data-value": String(value) }, text);
        }),
      ),
    );
    replaceChildren(
      this.panel.body,
      h(
        "div",
        { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Users table" },
        h("table", { class: "data-table", id: "users-table" }, h("thead", {}, head), h("tbody", {}, ...body)),
      ),
    );
  }
}

let table: UserTable | undefined;

export function loadUsers(ctx: LoadContext): Promise<void> {
  table ??= new UserTable();
  return table.start(ctx);
}
