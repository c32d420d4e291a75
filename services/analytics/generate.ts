// Realistic synthetic telemetry (demo data and the benchmark): users with their own client,
// autonomy habits, languages and models work in sessions of turns — messages, model usage, tool
// calls (some from MCP servers, including a server name duplicated by letter case as real data
// has), hooks, skills, slash commands, file operations, commits and pull requests; optionally
// (codeAndCost) also edit decisions, lines changed and client-reported costs. Deterministic
// for a seed, with stable event_ids, so generating twice and ingesting twice stores nothing new.
import type { IncomingEvent } from "./ingest/events.js";

/** mulberry32: small, fast, good enough for synthetic data. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function hashSeed(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

// usd: the synthetic clients' price in US dollars per million input tokens (output 5x, cache
// reads 0.1x, cache writes 1.25x), for the costs they report.
const MODELS = [
  { id: "claude-sonnet-4-5", tier: "standard", weight: 5, usd: 3 },
  { id: "claude-opus-4-1", tier: "thinking", weight: 2, usd: 15 },
  { id: "gpt-5", tier: "thinking", weight: 2, usd: 1.25 },
  { id: "gpt-5-mini", tier: "standard", weight: 2, usd: 0.25 },
  { id: "gemini-2.5-pro", tier: "thinking", weight: 1, usd: 1.25 },
  { id: "glm-4.6", tier: "standard", weight: 1, usd: 0.6 },
] as const;

const BUILTIN_TOOLS = [
  "Read",
  "Edit",
  "Write",
  "Bash",
  "Grep",
  "Glob",
  "LS",
  "TodoWrite",
  "WebSearch",
  "FetchUrl",
] as const;
const MCP_TOOLS = [
  { server: "github", tool: "github.create_pull_request" },
  { server: "github", tool: "github.search_code" },
  { server: "GitHub", tool: "github.get_issue" },
  { server: "linear", tool: "linear.create_issue" },
  { server: "sentry", tool: "sentry.get_issue_details" },
  { server: "postgres", tool: "postgres.query" },
] as const;
const SKILLS = ["pdf", "xlsx", "frontend-design", "webapp-testing", "changelog"] as const;
const SLASH_COMMANDS = ["/review", "/compact", "/init", "/cost", "/model", "/mcp", "/settings"] as const;
const HOOKS = [
  { event: "PostToolUse", matcher: "Edit|Write", command: 'npx prettier --write "$FILE"' },
  { event: "PostToolUse", matcher: "Bash", command: "./scripts/audit-command.sh" },
  { event: "Stop", matcher: "", command: "notify-send 'Agent finished'" },
  { event: "Notification", matcher: "", command: "say 'Agent needs you'" },
] as const;
const LANGUAGES = [
  { language: "typescript", extensions: ["ts", "tsx"], dirs: ["src", "web/src/components"] },
  { language: "python", extensions: ["py"], dirs: ["app", "scripts"] },
  { language: "go", extensions: ["go"], dirs: ["cmd/server", "internal/store"] },
  { language: "rust", extensions: ["rs"], dirs: ["src", "crates/core/src"] },
  { language: "java", extensions: ["java"], dirs: ["src/main/java/com/acme"] },
  { language: "sql", extensions: ["sql"], dirs: ["migrations"] },
  { language: "markdown", extensions: ["md"], dirs: ["docs"] },
  { language: "yaml", extensions: ["yaml", "yml"], dirs: [".github/workflows", "deploy"] },
] as const;
const CLIENTS = ["terminal-ui", "web", "non-interactive-cli"] as const;
const MODES = ["auto-high", "auto-medium", "auto-low", "spec", "manual"] as const;
/** The tool autonomy level a session in each mode mostly runs at. */
const LEVEL_OF_MODE = {
  "auto-high": "auto-high",
  "auto-medium": "auto-medium",
  "auto-low": "auto-low",
  spec: "auto-low",
  manual: "manual",
} as const;
const LEVELS = ["auto-high", "auto-medium", "auto-low", "manual"] as const;

export interface GeneratedUser {
  id: string;
  email: string | null;
  /** The user's first day of activity (YYYY-MM-DD): none before it (a user who joined later). */
  activeFrom?: string;
}

export interface GenerateOptions {
  orgId: string;
  users: readonly GeneratedUser[];
  /** UTC days, YYYY-MM-DD. */
  days: readonly string[];
  seed?: number;
  /** Scales the number of turns per session (1 = about 35 events per active user and day). */
  intensity?: number;
  /** Event ids are `${idPrefix}-...`; "" leaves events without ids. */
  idPrefix?: string;
  /**
   * Also an edit decision after each Edit or Write call, the lines an accepted one changed, and
   * the cost of model usage as most users' clients report it (/code, /costs). Off by default:
   * the added events shift the times of those after them, and the benchmark's data stays as it was.
   */
  codeAndCost?: boolean;
  /**
   * The ID of the user's (index into users) session number `session` of `day`; by default
   * `${idPrefix}-${user}-${day}-s${session}`. The demo names its sessions as the sessions API holds them.
   */
  sessionIdOf?: (user: number, day: string, session: number) => string;
}

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

function weighted<T extends { weight: number }>(rand: () => number, items: readonly T[]): T {
  const total = items.reduce((s, i) => s + i.weight, 0);
  let r = rand() * total;
  for (const item of items) if ((r -= item.weight) < 0) return item;
  return items[items.length - 1]!;
}

interface Profile {
  clients: Array<(typeof CLIENTS)[number]>;
  mode: (typeof MODES)[number];
  languages: Array<(typeof LANGUAGES)[number]>;
  model: (typeof MODELS)[number];
  weekdayActivity: number;
  mcpAffinity: number;
}

function profileOf(rand: () => number): Profile {
  const r = rand();
  const primary = r < 0.7 ? "terminal-ui" : r < 0.9 ? "web" : "non-interactive-cli";
  const clients: Profile["clients"] = [primary];
  if (rand() < 0.25)
    clients.push(
      pick(
        rand,
        CLIENTS.filter((c) => c !== primary),
      ),
    );
  const languages = [
    ...new Set(
      [pick(rand, LANGUAGES), pick(rand, LANGUAGES), pick(rand, LANGUAGES)].slice(0, 1 + Math.floor(rand() * 3)),
    ),
  ];
  return {
    clients,
    mode: pick(rand, MODES),
    languages,
    model: weighted(rand, MODELS),
    weekdayActivity: 0.55 + rand() * 0.4,
    mcpAffinity: rand() < 0.4 ? 0.25 : 0.02,
  };
}

/**
 * Yields the events of one user and day at a time (already in time order), so a caller can
 * ingest in batches without holding the whole data set in memory.
 */
export function* generateTelemetry(options: GenerateOptions): Generator<IncomingEvent[]> {
  const seed = options.seed ?? hashSeed(options.orgId);
  const intensity = options.intensity ?? 1;
  const prefix = options.idPrefix ?? "gen";
  const profiles = options.users.map((_, i) => profileOf(prng(seed ^ hashSeed(`user${i}`))));
  for (const day of options.days) {
    const weekday = new Date(`${day}T00:00:00Z`).getUTCDay();
    const weekend = weekday === 0 || weekday === 6;
    for (const [u, user] of options.users.entries()) {
      const rand = prng(seed ^ hashSeed(`${day}/${u}`));
      // The code and cost events draw from a stream of their own: the other events stay the same.
      const extra = options.codeAndCost ? prng(seed ^ hashSeed(`${day}/${u}/code`)) : undefined;
      // Clients of three users in four report costs; the others' usage is priced (or not) by the table.
      const reportsCost = u % 4 !== 3;
      const profile = profiles[u]!;
      if (user.activeFrom !== undefined && day < user.activeFrom) continue;
      if (rand() > (weekend ? profile.weekdayActivity * 0.25 : profile.weekdayActivity)) continue;
      const events: IncomingEvent[] = [];
      let seq = 0;
      // The code events' ids count apart, so the other events keep theirs (a demo written before
      // them and written again adds only them).
      let codeSeq = 0;
      let clock = Date.parse(`${day}T00:00:00Z`) + (7 + rand() * 4) * 3_600_000;
      const emit = (
        e: Omit<IncomingEvent, "orgId" | "userId" | "time" | "eventId" | "userEmail">,
        gapMs: number,
        client: string,
        sessionId: string,
        code = false,
      ) => {
        clock = Math.min(clock + gapMs, Date.parse(`${day}T23:59:59Z`));
        events.push({
          ...e,
          orgId: options.orgId,
          userId: user.id,
          ...(user.email ? { userEmail: user.email } : {}),
          time: new Date(clock).toISOString(),
          client,
          sessionId,
          ...(prefix
            ? { eventId: code ? `${prefix}-${u}-${day}-c${codeSeq++}` : `${prefix}-${u}-${day}-${seq++}` }
            : {}),
        });
      };
      const sessions = 1 + Math.floor(rand() * 2.2);
      for (let s = 0; s < sessions; s++) {
        const client = pick(rand, profile.clients);
        const sessionId = options.sessionIdOf ? options.sessionIdOf(u, day, s) : `${prefix || "s"}-${u}-${day}-s${s}`;
        const mode = rand() < 0.75 ? profile.mode : pick(rand, MODES);
        emit({ type: "session_start", autonomyMode: mode }, 60_000 + rand() * 3_600_000, client, sessionId);
        const turns = Math.max(1, Math.round((2 + rand() * 5) * intensity));
        for (let t = 0; t < turns; t++) {
          emit({ type: "message", role: "user" }, 20_000 + rand() * 120_000, client, sessionId);
          if (rand() < 0.1) emit({ type: "slash_command", name: pick(rand, SLASH_COMMANDS) }, 1_000, client, sessionId);
          if (rand() < 0.05) emit({ type: "skill", name: pick(rand, SKILLS) }, 1_000, client, sessionId);
          const model = rand() < 0.8 ? profile.model : weighted(rand, MODELS);
          const calls = 1 + Math.floor(rand() * 4);
          for (let c = 0; c < calls; c++) {
            const input = 2_000 + Math.floor(rand() * 30_000);
            const output = 100 + Math.floor(rand() * 3_000);
            const cacheRead = Math.floor(input * rand() * 4);
            const cacheWrite = Math.floor(input * rand() * 0.3);
            const cost = (model.usd * (input + output * 5 + cacheRead * 0.1 + cacheWrite * 1.25)) / 1e6;
            emit(
              {
                type: "model_usage",
                modelId: model.id,
                modelTier: model.tier,
                inputTokens: input,
                outputTokens: output,
                cacheReadTokens: cacheRead,
                cacheWriteTokens: cacheWrite,
                ...(extra && reportsCost ? { costUsd: Math.round(cost * 1e8) / 1e8 } : {}),
              },
              2_000 + rand() * 20_000,
              client,
              sessionId,
            );
            const mcp = rand() < profile.mcpAffinity ? pick(rand, MCP_TOOLS) : undefined;
            const tool = mcp ? mcp.tool : pick(rand, BUILTIN_TOOLS);
            const level = rand() < 0.85 ? LEVEL_OF_MODE[mode] : pick(rand, LEVELS);
            emit(
              { type: "tool_call", tool, autonomyLevel: level, ...(mcp ? { mcpServer: mcp.server } : {}) },
              500 + rand() * 5_000,
              client,
              sessionId,
            );
            if (tool === "Edit" || tool === "Write") {
              const lang = pick(rand, profile.languages);
              const path = `${pick(rand, lang.dirs)}/${pick(rand, ["main", "util", "handler", "store", "index", "README"])}${Math.floor(rand() * 40)}.${pick(rand, lang.extensions)}`;
              emit(
                {
                  type: "file_op",
                  op: tool === "Write" && rand() < 0.7 ? "created" : "edited",
                  path,
                  language: lang.language,
                },
                200,
                client,
                sessionId,
              );
              if (extra) {
                const accepted = extra() < 0.85;
                const decision = accepted ? "accept" : "reject";
                emit({ type: "edit_decision", decision, tool, language: lang.language }, 100, client, sessionId, true);
                if (accepted) {
                  const added = tool === "Write" ? 20 + Math.floor(extra() * 200) : Math.floor(extra() * 40);
                  const removed = tool === "Write" ? 0 : 1 + Math.floor(extra() * 25);
                  emit(
                    { type: "lines_changed", linesAdded: added, linesRemoved: removed, path, language: lang.language },
                    100,
                    client,
                    sessionId,
                    true,
                  );
                }
              }
              if (rand() < 0.6) emit({ type: "hook", ...HOOKS[0] }, 300, client, sessionId);
            } else if (tool === "Bash" && rand() < 0.5) {
              emit({ type: "hook", ...HOOKS[1] }, 300, client, sessionId);
            }
          }
          emit({ type: "message", role: "assistant" }, 2_000 + rand() * 10_000, client, sessionId);
        }
        if (rand() < 0.5) emit({ type: "hook", ...HOOKS[2] }, 1_000, client, sessionId);
        if (rand() < 0.1) emit({ type: "hook", ...HOOKS[3] }, 1_000, client, sessionId);
        if (rand() < 0.45) emit({ type: "git_commit" }, 30_000, client, sessionId);
        if (rand() < 0.12) emit({ type: "pr_created" }, 30_000, client, sessionId);
      }
      yield events;
    }
  }
}
