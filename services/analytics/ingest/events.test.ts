// Validation of single telemetry events and the small helpers it uses (no database).
import { describe, expect, it } from "vitest";
import { extensionOf, parseTimestamp, validateEvent, type IncomingEvent } from "./events.js";

const NOW = Date.parse("2026-06-01T12:00:00Z");
const common: IncomingEvent = {
  type: "git_commit",
  time: "2026-05-31T10:00:00Z",
  orgId: "o1",
  userId: "u1",
  client: "web",
};

function reason(e: IncomingEvent): string {
  const v = validateEvent(e, NOW);
  if (v.ok) throw new Error("expected a rejection");
  return v.reason;
}

describe("validateEvent", () => {
  it("accepts each type with its own fields and stores only those", () => {
    const cases: IncomingEvent[] = [
      { ...common, type: "session_start", autonomyMode: "spec" },
      { ...common, type: "message", role: "assistant" },
      {
        ...common,
        type: "model_usage",
        modelId: "m",
        modelTier: "thinking",
        inputTokens: 1,
        outputTokens: 0,
        cacheReadTokens: 3,
        cacheWriteTokens: 4,
      },
      { ...common, type: "tool_call", tool: "Read", autonomyLevel: "auto-low", mcpServer: "github" },
      { ...common, type: "skill", name: "pdf" },
      { ...common, type: "slash_command", name: "/review" },
      { ...common, type: "hook", event: "Stop", command: "notify" },
      { ...common, type: "file_op", op: "created", path: "src/x.TS", language: "typescript" },
      { ...common, type: "git_commit" },
      { ...common, type: "pr_created", role: "user" },
    ];
    for (const e of cases) {
      const v = validateEvent(e, NOW);
      expect(v.ok, JSON.stringify(v)).toBe(true);
    }
    const file = validateEvent(cases[7]!, NOW);
    expect(file.ok && file.row.extension).toBe("ts");
    const hook = validateEvent(cases[6]!, NOW);
    expect(hook.ok && hook.row.hookMatcher).toBe("");
    // A field of another type is not stored.
    const pr = validateEvent(cases[9]!, NOW);
    expect(pr.ok && pr.row.role).toBeNull();
  });

  it("treats empty optional strings as absent", () => {
    const v = validateEvent(
      {
        ...common,
        type: "tool_call",
        tool: "Read",
        autonomyLevel: "manual",
        mcpServer: "",
        eventId: "",
        sessionId: "",
      },
      NOW,
    );
    expect(v.ok && [v.row.mcpServer, v.row.eventId, v.row.sessionId]).toEqual([null, null, null]);
  });

  it("rejects with a reason naming the field", () => {
    expect(reason({ ...common, type: undefined })).toMatch(/^type: is required/);
    expect(reason({ ...common, type: "nap" })).toMatch(/^type: must be one of/);
    expect(reason({ ...common, time: "2026-05-31" })).toMatch(/^time: must be an RFC 3339 timestamp/);
    expect(reason({ ...common, time: "2026-02-30T10:00:00Z" })).toMatch(/^time: /);
    expect(reason({ ...common, time: "2026-01-13T23:59:59Z" })).toMatch(/^time: must not be before 2026-01-14/);
    expect(reason({ ...common, time: "2026-06-03T12:00:01Z" })).toMatch(/^time: is more than a day in the future/);
    expect(reason({ ...common, orgId: "" })).toMatch(/^org_id: is required/);
    expect(reason({ ...common, userId: undefined })).toMatch(/^user_id: is required/);
    expect(reason({ ...common, client: "vim" })).toMatch(
      /^client: must be one of terminal-ui, web, non-interactive-cli/,
    );
    expect(reason({ ...common, type: "session_start" })).toMatch(/^autonomy_mode: is required/);
    expect(reason({ ...common, type: "session_start", autonomyMode: "yolo" })).toMatch(
      /^autonomy_mode: must be one of/,
    );
    expect(reason({ ...common, type: "message", role: "tool" })).toMatch(/^role: /);
    const usage = {
      ...common,
      type: "model_usage",
      modelId: "m",
      modelTier: "standard",
      inputTokens: 1,
      outputTokens: 1,
      cacheReadTokens: 1,
      cacheWriteTokens: 1,
    };
    expect(reason({ ...usage, modelTier: "turbo" })).toMatch(/^model_tier: /);
    expect(reason({ ...usage, outputTokens: -1 })).toMatch(/^output_tokens: must be an integer/);
    expect(reason({ ...usage, cacheReadTokens: 2.5 })).toMatch(/^cache_read_tokens: must be an integer/);
    expect(reason({ ...usage, cacheWriteTokens: undefined })).toMatch(/^cache_write_tokens: is required/);
    expect(reason({ ...common, type: "tool_call", tool: "Read", autonomyLevel: "spec" })).toMatch(
      /^autonomy_level: must be one of auto-high, auto-medium, auto-low, manual/,
    );
    expect(reason({ ...common, type: "skill" })).toMatch(/^name: is required/);
    expect(reason({ ...common, type: "hook", event: "Stop" })).toMatch(/^command: is required/);
    expect(reason({ ...common, type: "file_op", op: "deleted", path: "a", language: "x" })).toMatch(/^op: /);
    expect(reason({ ...common, type: "file_op", op: "edited", language: "x" })).toMatch(/^path: is required/);
    expect(reason({ ...common, userId: "u".repeat(257) })).toMatch(/^user_id: must be at most 256 characters/);
    // Postgres text cannot hold U+0000: required, optional and the hook's matcher alike.
    expect(reason({ ...common, userId: "u\u00001" })).toBe("user_id: must not contain the NUL character (U+0000)");
    expect(reason({ ...common, sessionId: "s\u0000" })).toBe("session_id: must not contain the NUL character (U+0000)");
    expect(reason({ ...common, type: "hook", event: "PreToolUse", matcher: "Bash\u0000", command: "lint" })).toBe(
      "matcher: must not contain the NUL character (U+0000)",
    );
  });
});

describe("validateEvent: lines, edit decisions, cost and source", () => {
  it("stores lines_changed with a missing count as 0, path and language optional", () => {
    const v = validateEvent(
      { ...common, type: "lines_changed", linesAdded: 12, path: "src/Main.KT", language: "kotlin" },
      NOW,
    );
    expect(v.ok && [v.row.linesAdded, v.row.linesRemoved, v.row.extension, v.row.language]).toEqual([
      12,
      0,
      "kt",
      "kotlin",
    ]);
    const bare = validateEvent({ ...common, type: "lines_changed", linesRemoved: 3 }, NOW);
    expect(bare.ok && [bare.row.linesAdded, bare.row.linesRemoved, bare.row.path, bare.row.extension]).toEqual([
      0,
      3,
      null,
      null,
    ]);
  });

  it("stores edit_decision's decision and tool, and no line counts", () => {
    const v = validateEvent(
      { ...common, type: "edit_decision", decision: "reject", tool: "Write", linesAdded: 5 },
      NOW,
    );
    expect(v.ok && [v.row.decision, v.row.tool, v.row.language, v.row.linesAdded]).toEqual([
      "reject",
      "Write",
      null,
      null,
    ]);
  });

  it("keeps model_usage's cost_usd when given, null when not", () => {
    const usage: IncomingEvent = {
      ...common,
      type: "model_usage",
      modelId: "m",
      modelTier: "standard",
      inputTokens: 1,
      outputTokens: 1,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    };
    const priced = validateEvent({ ...usage, costUsd: 0.0125 }, NOW);
    expect(priced.ok && priced.row.costUsd).toBe(0.0125);
    const free = validateEvent({ ...usage, costUsd: 0 }, NOW);
    expect(free.ok && free.row.costUsd).toBe(0);
    const unreported = validateEvent(usage, NOW);
    expect(unreported.ok && unreported.row.costUsd).toBeNull();
    // Cost on another type is not stored.
    const commit = validateEvent({ ...common, costUsd: 3 }, NOW);
    expect(commit.ok && commit.row.costUsd).toBeNull();
    expect(reason({ ...usage, costUsd: -0.01 })).toMatch(/^cost_usd: must be a number of US dollars from 0/);
    expect(reason({ ...usage, costUsd: Number.NaN })).toMatch(/^cost_usd: /);
    expect(reason({ ...usage, costUsd: Number.POSITIVE_INFINITY })).toMatch(/^cost_usd: /);
  });

  it("rejects bad line counts and decisions naming the field", () => {
    expect(reason({ ...common, type: "lines_changed" })).toBe("lines_added: or lines_removed must be more than 0");
    expect(reason({ ...common, type: "lines_changed", linesAdded: 0, linesRemoved: 0 })).toMatch(/^lines_added: /);
    expect(reason({ ...common, type: "lines_changed", linesAdded: 1.5 })).toMatch(/^lines_added: must be an integer/);
    expect(reason({ ...common, type: "lines_changed", linesRemoved: -2 })).toMatch(
      /^lines_removed: must be an integer/,
    );
    expect(reason({ ...common, type: "lines_changed", linesAdded: 1, path: "p".repeat(4097) })).toMatch(
      /^path: must be at most 4096/,
    );
    expect(reason({ ...common, type: "edit_decision", tool: "Edit" })).toMatch(
      /^decision: is required \(one of accept, reject\)/,
    );
    expect(reason({ ...common, type: "edit_decision", tool: "Edit", decision: "maybe" })).toMatch(
      /^decision: must be one of accept, reject/,
    );
    expect(reason({ ...common, type: "edit_decision", decision: "accept" })).toBe("tool: is required");
  });

  it("marks rows native unless told the source", () => {
    const native = validateEvent(common, NOW);
    expect(native.ok && native.row.source).toBe("native");
    const log = validateEvent(common, NOW, { source: "otlp_log" });
    expect(log.ok && log.row.source).toBe("otlp_log");
  });
});

describe("parseTimestamp", () => {
  it("reads RFC 3339 with offsets and fractions into the instant", () => {
    expect(parseTimestamp("2026-03-02T01:30:00+02:00")?.toISOString()).toBe("2026-03-01T23:30:00.000Z");
    expect(parseTimestamp("2026-03-01t23:59:59.999999z")?.toISOString()).toBe("2026-03-01T23:59:59.999Z");
    expect(parseTimestamp("2026-03-01 10:00:00Z")?.toISOString()).toBe("2026-03-01T10:00:00.000Z");
  });
  it("refuses other shapes and impossible dates", () => {
    for (const bad of [
      "2026-03-01",
      "2026-03-01T10:00:00",
      "1772359200000",
      "2026-02-29T00:00:00Z",
      "2026-03-01T24:00:00Z",
      "next tuesday",
    ]) {
      expect(parseTimestamp(bad), bad).toBeUndefined();
    }
  });
});

describe("extensionOf", () => {
  it("is the lower-case extension without the dot, or empty", () => {
    expect(extensionOf("src/App.TSX")).toBe("tsx");
    expect(extensionOf("a.tar.gz")).toBe("gz");
    expect(extensionOf("C:\\repo\\lib.Rs")).toBe("rs");
    expect(extensionOf("Makefile")).toBe("");
    expect(extensionOf("config/.gitignore")).toBe("");
    expect(extensionOf("dist.v2/bundle")).toBe("");
    expect(extensionOf("notes.")).toBe("");
  });
});
