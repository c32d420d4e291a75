// For test/analytics.test.ts: a generated telemetry data set with known answers, and a plain
// reference computation of every metric of docs/metrics.md straight from the raw events. It shares
// no code with services/analytics on purpose: the test compares two independent derivations.

export type RawEvent = Record<string, string | number>;

export interface RefUser {
  id: string;
  email: string;
}

/** Seeded PRNG (xorshift32) so the data set is the same on every run. */
function rng(seed: number) {
  let x = seed || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}

const MODELS = [
  { id: "alpha-large", tier: "thinking" },
  { id: "beta-small", tier: "standard" },
  { id: "gamma-mid", tier: "standard" },
];
/** Credit multipliers the test configures (one decimal keeps every credit value exact in cents). */
export const MULTIPLIERS: Record<string, number> = { "alpha-large": 1.5, "gamma-mid": 0.5 };
const TOOLS = ["Read", "Edit", "Bash", "Grep", "Write"];
const MCP = [
  { tool: "create_pr", server: "github" },
  { tool: "get_issue", server: "GitHub" },
  { tool: "query", server: "postgres" },
];
const PATHS = [
  { path: "src/app/Main.TS", language: "typescript" },
  { path: "lib/util.py", language: "python" },
  { path: "Makefile", language: "make" },
  { path: "config/.gitignore", language: "text" },
  { path: "dist.v2/bundle", language: "text" },
  { path: "C:\\work\\crate\\lib.Rs", language: "rust" },
  { path: "backup/db.tar.gz", language: "binary" },
  { path: "docs/guide.md", language: "markdown" },
];
const HOOKS = [
  { event: "PostToolUse", matcher: "Edit|Write", command: "prettier --write" },
  { event: "Stop", matcher: "", command: "notify-send done" },
  { event: "PostToolUse", matcher: "Bash", command: "audit.sh" },
];
const CLIENTS = ["terminal-ui", "web", "non-interactive-cli"];
const MODES = ["auto-high", "auto-medium", "auto-low", "spec", "manual"];
const LEVELS = ["auto-high", "auto-medium", "auto-low", "manual"];

/**
 * Events for the users of one organization over the given days. Besides random activity it
 * plants the edge cases: a day with no events at all, an event written with a +02:00 offset that
 * falls on the previous UTC day, an event at 23:59:59.999Z, a user whose session modes tie, a
 * user who only has an earlier session (delegation fallback), a user with no session ever, events
 * without a session_id, and MCP server names that differ by case.
 */
export function generateEvents(
  orgId: string,
  users: readonly RefUser[],
  days: readonly string[],
  quietDay: string,
  seed = 42,
): RawEvent[] {
  const rand = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const out: RawEvent[] = [];
  let n = 0;
  const base = (user: RefUser, time: string, client: string, session: string | null): RawEvent => ({
    org_id: orgId,
    user_id: user.id,
    time,
    client,
    event_id: `ev-${orgId.slice(0, 8)}-${n++}`,
    ...(session ? { session_id: session } : {}),
    ...(rand() < 0.3 ? { user_email: user.email } : {}),
  });
  for (const day of days) {
    if (day === quietDay) continue;
    for (const [ui, user] of users.entries()) {
      // The last user never starts a session; the one before only on the first day (always active then).
      const skip = rand() < 0.3;
      if (skip && ui !== 0 && !(ui === users.length - 2 && day === days[0])) continue;
      const clientCount = rand() < 0.3 ? 2 : 1;
      const clients = clientCount === 2 ? [CLIENTS[ui % 3]!, CLIENTS[(ui + 1) % 3]!] : [CLIENTS[ui % 3]!];
      const sessions =
        ui === users.length - 1 || (ui === users.length - 2 && day !== days[0]) ? 0 : 1 + Math.floor(rand() * 3);
      const sessionIds = Array.from({ length: Math.max(1, sessions) }, (_, s) => `sess-${ui}-${day}-${s}`);
      let second = 8 * 3600 + Math.floor(rand() * 3600);
      const at = () => {
        second += 1 + Math.floor(rand() * 60);
        const h = String(Math.floor(second / 3600)).padStart(2, "0");
        const m = String(Math.floor((second % 3600) / 60)).padStart(2, "0");
        const s = String(second % 60).padStart(2, "0");
        return `${day}T${h}:${m}:${s}Z`;
      };
      for (let s = 0; s < sessions; s++) {
        // User 1 starts exactly one auto-low and one spec session on each day it has two: a tie.
        const mode = ui === 1 && sessions >= 2 ? (s === 0 ? "spec" : s === 1 ? "auto-low" : pick(MODES)) : pick(MODES);
        out.push({ ...base(user, at(), pick(clients), sessionIds[s]!), type: "session_start", autonomy_mode: mode });
      }
      const count = 5 + Math.floor(rand() * 25);
      for (let i = 0; i < count; i++) {
        const session = rand() < 0.1 ? null : pick(sessionIds);
        const e = base(user, at(), pick(clients), session);
        const r = rand();
        if (r < 0.2) out.push({ ...e, type: "message", role: rand() < 0.5 ? "user" : "assistant" });
        else if (r < 0.35) {
          const model = pick(MODELS);
          out.push({
            ...e,
            type: "model_usage",
            model_id: model.id,
            model_tier: model.tier,
            input_tokens: Math.floor(rand() * 5000),
            output_tokens: Math.floor(rand() * 800),
            cache_read_tokens: Math.floor(rand() * 9000),
            cache_write_tokens: Math.floor(rand() * 500),
          });
        } else if (r < 0.6) {
          const mcp = rand() < 0.25 ? pick(MCP) : undefined;
          out.push({
            ...e,
            type: "tool_call",
            tool: mcp ? mcp.tool : pick(TOOLS),
            autonomy_level: pick(LEVELS),
            ...(mcp ? { mcp_server: mcp.server } : {}),
          });
        } else if (r < 0.65) out.push({ ...e, type: "skill", name: pick(["pdf", "xlsx", "review-pr"]) });
        else if (r < 0.7) out.push({ ...e, type: "slash_command", name: pick(["/compact", "/review", "/cost"]) });
        else if (r < 0.78) out.push({ ...e, type: "hook", ...pick(HOOKS) });
        else if (r < 0.92) out.push({ ...e, type: "file_op", op: rand() < 0.4 ? "created" : "edited", ...pick(PATHS) });
        else if (r < 0.97) out.push({ ...e, type: "git_commit" });
        else out.push({ ...e, type: "pr_created" });
      }
    }
  }
  // Boundary times: 01:30+02:00 on the second day is 23:30Z on the first; 23:59:59.999Z stays on its day.
  const u0 = users[0]!;
  if (days.length < 2) return out;
  out.push({ ...base(u0, `${days[1]}T01:30:00+02:00`, "web", null), type: "message", role: "user" });
  out.push({
    ...base(u0, `${days[1]}T23:59:59.999Z`, "web", null),
    type: "tool_call",
    tool: "Read",
    autonomy_level: "manual",
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reference computation

const dayOfEvent = (e: RawEvent) => new Date(String(e.time)).toISOString().slice(0, 10);
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function shiftDay(day: string, n: number): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + n);
  return d.toISOString().slice(0, 10);
}

export function daysFrom(start: string, end: string): string[] {
  const out: string[] = [];
  for (let d = start; d <= end; d = shiftDay(d, 1)) out.push(d);
  return out;
}

/** Credits of one model_usage event in hundredths (exact for one-decimal multipliers). */
function creditCents(e: RawEvent): number {
  const m10 = Math.round((MULTIPLIERS[String(e.model_id)] ?? 1) * 10);
  const full = Number(e.input_tokens) + Number(e.output_tokens) + Number(e.cache_write_tokens);
  return (full * 10 + Number(e.cache_read_tokens)) * m10;
}

function extension(path: string): string {
  const base = path.split(/[\\/]/).pop() ?? "";
  const m = /^(.+)\.([^.]*)$/.exec(base);
  return m ? m[2]!.toLowerCase() : "";
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const pos = p * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (pos - lo) * (sorted[hi]! - sorted[lo]!);
}

function countBy<T>(items: readonly T[], key: (t: T) => string): Map<string, number> {
  const m = new Map<string, number>();
  for (const i of items) m.set(key(i), (m.get(key(i)) ?? 0) + 1);
  return m;
}

function sortedEntries(m: Map<string, number>): Array<[string, number]> {
  return [...m.entries()].sort(([a], [b]) => cmp(a, b));
}

export class Reference {
  private readonly byDay = new Map<string, RawEvent[]>();
  private readonly activeDays = new Map<string, Set<string>>();

  constructor(
    events: readonly RawEvent[],
    private readonly emails: ReadonlyMap<string, string>,
  ) {
    for (const e of events) {
      const d = dayOfEvent(e);
      if (!this.byDay.has(d)) this.byDay.set(d, []);
      this.byDay.get(d)!.push(e);
      const u = String(e.user_id);
      if (!this.activeDays.has(u)) this.activeDays.set(u, new Set());
      this.activeDays.get(u)!.add(d);
    }
    this.all = [...events].sort((a, b) => Date.parse(String(a.time)) - Date.parse(String(b.time)));
  }

  private readonly all: RawEvent[];

  private day(d: string): RawEvent[] {
    return this.byDay.get(d) ?? [];
  }

  private activeUsers(from: string, to: string): number {
    let n = 0;
    for (const days of this.activeDays.values()) if ([...days].some((d) => d >= from && d <= to)) n++;
    return n;
  }

  private models(events: readonly RawEvent[]) {
    const usage = events.filter((e) => e.type === "model_usage");
    const ids = [...new Set(usage.map((e) => String(e.model_id)))].sort(cmp);
    return ids.map((id) => {
      const mine = usage.filter((e) => e.model_id === id);
      return {
        model_id: id,
        model_tier: mine.some((e) => e.model_tier === "thinking") ? "thinking" : "standard",
        billable_tokens: mine.reduce((s, e) => s + creditCents(e), 0) / 100,
        input_tokens: mine.reduce((s, e) => s + Number(e.input_tokens), 0),
        output_tokens: mine.reduce((s, e) => s + Number(e.output_tokens), 0),
      };
    });
  }

  tokens(start: string, end: string) {
    return daysFrom(start, end).map((d) => {
      const ev = this.day(d);
      const usage = ev.filter((e) => e.type === "model_usage");
      const sum = (f: string) => usage.reduce((s, e) => s + Number(e[f]), 0);
      const users = [...new Set(usage.map((e) => String(e.user_id)))].sort(cmp);
      return {
        date: d,
        billable_tokens: usage.reduce((s, e) => s + creditCents(e), 0) / 100,
        input_tokens: sum("input_tokens"),
        output_tokens: sum("output_tokens"),
        cache_read_tokens: sum("cache_read_tokens"),
        cache_write_tokens: sum("cache_write_tokens"),
        by_model: this.models(ev),
        by_user: users.map((u) => {
          const mine = usage.filter((e) => e.user_id === u);
          return {
            user_id: u,
            user_email: this.emails.get(u) ?? "",
            billable_tokens: mine.reduce((s, e) => s + creditCents(e), 0) / 100,
            by_model: this.models(mine),
          };
        }),
      };
    });
  }

  tokensByModel(start: string, end: string) {
    return daysFrom(start, end).flatMap((d) =>
      this.models(this.day(d)).map((m) => ({
        date: d,
        group_key: m.model_id,
        billable_tokens: m.billable_tokens,
        input_tokens: m.input_tokens,
        output_tokens: m.output_tokens,
      })),
    );
  }

  tools(start: string, end: string) {
    return daysFrom(start, end).map((d) => {
      const ev = this.day(d);
      const calls = ev.filter((e) => e.type === "tool_call");
      const mcp = calls.filter((e) => e.mcp_server !== undefined);
      const users = [...new Set(ev.map((e) => String(e.user_id)))];
      const ratios = users
        .map((u) => {
          const um = ev.filter((e) => e.user_id === u && e.type === "message" && e.role === "user").length;
          return um > 0 ? calls.filter((e) => e.user_id === u).length / um : undefined;
        })
        .filter((r): r is number => r !== undefined)
        .sort((a, b) => a - b);
      const sessions = new Set(ev.filter((e) => e.session_id !== undefined).map((e) => String(e.session_id))).size;
      const userMessages = ev.filter((e) => e.type === "message" && e.role === "user").length;
      const hooks = ev.filter((e) => e.type === "hook");
      const hookKeys = [...new Set(hooks.map((h) => JSON.stringify([h.event, h.matcher, h.command])))]
        .map((k) => JSON.parse(k) as [string, string, string])
        .sort((a, b) => cmp(a[0], b[0]) || cmp(a[1], b[1]) || cmp(a[2], b[2]));
      const level = (l: string) =>
        calls.length ? calls.filter((e) => e.autonomy_level === l).length / calls.length : 0;
      const named = (type: string) =>
        sortedEntries(
          countBy(
            ev.filter((e) => e.type === type),
            (e) => String(e.name),
          ),
        ).map(([name, count]) => ({ name, count }));
      return {
        date: d,
        tool_calls: calls.length,
        by_tool: sortedEntries(countBy(calls, (e) => String(e.tool))).map(([tool, invocations]) => ({
          tool,
          invocations,
        })),
        mcp_users_with_mcp: new Set(mcp.map((e) => e.user_id)).size,
        mcp_by_server: sortedEntries(countBy(mcp, (e) => String(e.mcp_server))).map(([server, invocations]) => ({
          server,
          invocations,
        })),
        skills_invocations: ev.filter((e) => e.type === "skill").length,
        skills_by_name: named("skill"),
        slash_commands_invocations: ev.filter((e) => e.type === "slash_command").length,
        slash_commands_by_name: named("slash_command"),
        hooks_invocations: hooks.length,
        hooks_by_event: hookKeys.map(([event, matcher, command]) => ({
          event,
          matcher,
          command,
          count: hooks.filter((h) => h.event === event && h.matcher === matcher && h.command === command).length,
        })),
        web_users: new Set(ev.filter((e) => e.client === "web").map((e) => e.user_id)).size,
        autonomy_ratio_avg: ratios.length ? ratios.reduce((s, r) => s + r, 0) / ratios.length : 0,
        autonomy_ratio_p50: percentile(ratios, 0.5),
        autonomy_ratio_p90: percentile(ratios, 0.9),
        tool_calls_per_session_avg: sessions ? calls.length / sessions : 0,
        user_turns_per_session_avg: sessions ? userMessages / sessions : 0,
        tool_autonomy_level_ratio: {
          auto_high: level("auto-high"),
          auto_medium: level("auto-medium"),
          auto_low: level("auto-low"),
          manual: level("manual"),
        },
      };
    });
  }

  toolsByName(start: string, end: string) {
    return daysFrom(start, end).flatMap((d) =>
      sortedEntries(
        countBy(
          this.day(d).filter((e) => e.type === "tool_call"),
          (e) => String(e.tool),
        ),
      ).map(([tool, n]) => ({ date: d, group_key: tool, tool_calls: n })),
    );
  }

  private clients(d: string): Array<[string, number]> {
    const ev = this.day(d);
    return [...new Set(ev.map((e) => String(e.client)))]
      .sort(cmp)
      .map((c) => [c, new Set(ev.filter((e) => e.client === c).map((e) => e.user_id)).size]);
  }

  activity(start: string, end: string) {
    return daysFrom(start, end).map((d) => {
      const ev = this.day(d);
      return {
        date: d,
        daily_active_users: new Set(ev.map((e) => e.user_id)).size,
        weekly_active_users: this.activeUsers(shiftDay(d, -6), d),
        monthly_active_users: this.activeUsers(shiftDay(d, -29), d),
        daily_active_users_by_client: Object.fromEntries(this.clients(d)),
        sessions: ev.filter((e) => e.type === "session_start").length,
        messages: ev.filter((e) => e.type === "message").length,
        user_messages: ev.filter((e) => e.type === "message" && e.role === "user").length,
      };
    });
  }

  activityByClient(start: string, end: string) {
    return daysFrom(start, end).flatMap((d) =>
      this.clients(d).map(([client, users]) => ({ date: d, group_key: client, daily_active_users: users })),
    );
  }

  productivity(start: string, end: string) {
    return daysFrom(start, end).map((d) => {
      const ops = this.day(d).filter((e) => e.type === "file_op");
      return {
        date: d,
        files_created: ops.filter((e) => e.op === "created").length,
        files_edited: ops.filter((e) => e.op === "edited").length,
        by_extension: sortedEntries(countBy(ops, (e) => extension(String(e.path)))).map(([ext, count]) => ({
          extension: ext,
          count,
        })),
        by_language: sortedEntries(countBy(ops, (e) => String(e.language))).map(([language, count]) => ({
          language,
          count,
        })),
        git_commits: this.day(d).filter((e) => e.type === "git_commit").length,
        git_prs_created: this.day(d).filter((e) => e.type === "pr_created").length,
      };
    });
  }

  /** Every /users row of the range, ordered by user ID then date. */
  users(start: string, end: string) {
    const rows = [];
    const ids = [...this.activeDays.keys()].sort(cmp);
    for (const u of ids) {
      for (const d of daysFrom(start, end)) {
        const ev = this.day(d).filter((e) => e.user_id === u);
        if (ev.length === 0) continue;
        const count = (type: string, f?: (e: RawEvent) => boolean) =>
          ev.filter((e) => e.type === type && (!f || f(e))).length;
        const usage = ev.filter((e) => e.type === "model_usage");
        const perModel = new Map<string, number>();
        for (const e of usage)
          perModel.set(String(e.model_id), (perModel.get(String(e.model_id)) ?? 0) + creditCents(e));
        const primary = [...perModel.entries()].sort(([a, x], [b, y]) => y - x || cmp(a, b))[0]?.[0] ?? "";
        const tier = primary
          ? usage.some((e) => e.model_id === primary && e.model_tier === "thinking")
            ? "thinking"
            : "standard"
          : "";
        const toolCalls = count("tool_call");
        const userMessages = count("message", (e) => e.role === "user");
        rows.push({
          user_id: u,
          user_email: this.emails.get(u) ?? null,
          date: d,
          tool_calls: toolCalls,
          billable_tokens: usage.reduce((s, e) => s + creditCents(e), 0) / 100,
          primary_model: primary,
          primary_model_tier: tier,
          files_created: count("file_op", (e) => e.op === "created"),
          files_edited: count("file_op", (e) => e.op === "edited"),
          git_commits: count("git_commit"),
          git_prs_created: count("pr_created"),
          mcp_calls: count("tool_call", (e) => e.mcp_server !== undefined),
          skill_calls: count("skill"),
          slash_commands: count("slash_command"),
          hooks: count("hook"),
          sessions: count("session_start"),
          messages: count("message"),
          user_messages: userMessages,
          assistant_messages: count("message", (e) => e.role === "assistant"),
          autonomy_ratio: userMessages ? toolCalls / userMessages : 0,
          delegation_level: this.delegation(u, d, ev),
          languages: [...new Set(ev.filter((e) => e.type === "file_op").map((e) => String(e.language)))].sort(cmp),
        });
      }
    }
    return rows;
  }

  private delegation(user: string, day: string, ev: readonly RawEvent[]): string {
    const starts = ev.filter((e) => e.type === "session_start").map((e) => String(e.autonomy_mode));
    if (starts.length > 0) {
      const counts = countBy(starts, (m) => m);
      const best = Math.max(...counts.values());
      return MODES.find((m) => counts.get(m) === best)!;
    }
    const dayStart = Date.parse(`${day}T00:00:00Z`);
    const earlier = this.all.filter(
      (e) => e.user_id === user && e.type === "session_start" && Date.parse(String(e.time)) < dayStart,
    );
    return earlier.length ? String(earlier[earlier.length - 1]!.autonomy_mode) : "manual";
  }
}

/**
 * Deep comparison where numbers may differ by floating-point rounding (averages and
 * percentiles are computed in another order by Postgres): everything else must be equal,
 * including key sets and array order. Returns the first difference, or undefined.
 */
export function firstDifference(actual: unknown, expected: unknown, path = "$"): string | undefined {
  if (typeof expected === "number" && typeof actual === "number") {
    return Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected))
      ? undefined
      : `${path}: ${actual} != ${expected}`;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${path}: not an array`;
    if (actual.length !== expected.length) return `${path}: length ${actual.length} != ${expected.length}`;
    for (let i = 0; i < expected.length; i++) {
      const d = firstDifference(actual[i], expected[i], `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return `${path}: not an object`;
    const ek = Object.keys(expected).sort();
    const ak = Object.keys(actual).sort();
    if (JSON.stringify(ek) !== JSON.stringify(ak))
      return `${path}: keys ${JSON.stringify(ak)} != ${JSON.stringify(ek)}`;
    for (const k of ek) {
      const d = firstDifference(
        (actual as Record<string, unknown>)[k],
        (expected as Record<string, unknown>)[k],
        `${path}.${k}`,
      );
      if (d) return d;
    }
    return undefined;
  }
  return Object.is(actual, expected) ? undefined : `${path}: ${JSON.stringify(actual)} != ${JSON.stringify(expected)}`;
}
