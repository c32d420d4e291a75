// Claude Code's documented telemetry (its "Monitoring" page: metrics and log events exported over
// OTLP) mapped onto our telemetry events (ingest/events.ts). docs/otlp.md has the table; each
// rule here is one row of it.
import type { IncomingEvent } from "../ingest/events.js";
import { type Attributes, numeric, text } from "./attributes.js";
import type { Owner } from "./attribution.js";

/** What a metric's or event's name leads to. */
export type Known = "stored" | "not_stored";

export const METRICS: Readonly<Record<string, Known>> = {
  "claude_code.token.usage": "stored",
  "claude_code.cost.usage": "stored",
  "claude_code.session.count": "stored",
  "claude_code.lines_of_code.count": "stored",
  "claude_code.commit.count": "stored",
  "claude_code.pull_request.count": "stored",
  "claude_code.code_edit_tool.decision": "stored",
  // Known, and not stored: our activity metrics come from the events themselves.
  "claude_code.active_time.total": "not_stored",
};

export const LOG_EVENTS: Readonly<Record<string, Known>> = {
  "claude_code.user_prompt": "stored",
  "claude_code.tool_result": "stored",
  // Not stored: the call itself arrives as tool_result (with the same decision and source), and
  // edits' accept/reject counts as claude_code.code_edit_tool.decision; storing both would count
  // them twice.
  "claude_code.tool_decision": "not_stored",
  "claude_code.api_request": "stored",
  // Documented by Claude Code; a failed request has no usage to count.
  "claude_code.api_error": "not_stored",
};

/**
 * Our `client` from Claude Code's `terminal.type`: "non-interactive" (claude -p, the SDK) is the
 * non-interactive CLI, "web" the web client, anything else (iTerm.app, vscode, tmux, ...) a
 * terminal UI, and so is a record without one.
 */
export function clientOf(attrs: Attributes): string {
  const terminal = text(attrs, "terminal.type")?.toLowerCase();
  if (terminal === "non-interactive") return "non-interactive-cli";
  if (terminal === "web") return "web";
  return "terminal-ui";
}

/** Claude Code's tool names of MCP tools: mcp__<server>__<tool>. */
const MCP_TOOL = /^mcp__(.+?)__(.+)$/;

export interface Common {
  readonly owner: Owner;
  readonly attrs: Attributes;
  /** RFC 3339. */
  readonly time: string;
  readonly eventId: string;
}

function base(c: Common, type: string): IncomingEvent {
  const sessionId = text(c.attrs, "session.id");
  return {
    type,
    time: c.time,
    orgId: c.owner.orgId,
    userId: c.owner.userId,
    userEmail: c.owner.userEmail,
    client: clientOf(c.attrs),
    eventId: c.eventId,
    ...(sessionId === undefined ? {} : { sessionId }),
  };
}

/** A model_usage event of `model` with every token count 0: the caller sets what was reported. */
function usageEvent(c: Common, model: string): IncomingEvent {
  return {
    ...base(c, "model_usage"),
    modelId: model,
    modelTier: "standard",
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
  };
}

export type Mapped = { ok: true; events: IncomingEvent[] } | { ok: false; reason: string };

/** At most this many events from one data point's count (a session count of 3: three events). */
export const MAX_EVENTS_PER_POINT = 1000;

const TOKEN_FIELDS: Readonly<Record<string, "inputTokens" | "outputTokens" | "cacheReadTokens" | "cacheWriteTokens">> =
  {
    input: "inputTokens",
    output: "outputTokens",
    cacheRead: "cacheReadTokens",
    cacheCreation: "cacheWriteTokens",
  };

function repeated(c: Common, count: number, make: (c: Common) => IncomingEvent): Mapped {
  const n = Math.round(count);
  if (n < 0) return { ok: false, reason: `a count must not be negative, got ${count}` };
  if (n > MAX_EVENTS_PER_POINT)
    return { ok: false, reason: `a count above ${MAX_EVENTS_PER_POINT} in one data point is refused, got ${count}` };
  const events: IncomingEvent[] = [];
  for (let i = 0; i < n; i++) events.push(make({ ...c, eventId: `${c.eventId}:${i}` }));
  return { ok: true, events };
}

/** The events of `value` (what a data point adds) of a stored metric. */
export function mapMetric(name: string, value: number, c: Common): Mapped {
  switch (name) {
    case "claude_code.token.usage": {
      const type = text(c.attrs, "type");
      const field = type === undefined ? undefined : TOKEN_FIELDS[type];
      if (field === undefined)
        return {
          ok: false,
          reason: `type: must be one of ${Object.keys(TOKEN_FIELDS).join(", ")}, got "${type ?? ""}"`,
        };
      const model = text(c.attrs, "model");
      if (model === undefined) return { ok: false, reason: "model: the attribute is required" };
      const tokens = Math.round(value);
      if (tokens === 0) return { ok: true, events: [] };
      const event = usageEvent(c, model);
      event[field] = tokens;
      return { ok: true, events: [event] };
    }
    case "claude_code.cost.usage": {
      const model = text(c.attrs, "model");
      if (model === undefined) return { ok: false, reason: "model: the attribute is required" };
      if (value === 0) return { ok: true, events: [] };
      // The cost alone: the tokens arrive as claude_code.token.usage.
      return {
        ok: true,
        events: [{ ...usageEvent(c, model), costUsd: value }],
      };
    }
    case "claude_code.lines_of_code.count": {
      const type = text(c.attrs, "type");
      if (type !== "added" && type !== "removed")
        return { ok: false, reason: `type: must be added or removed, got "${type ?? ""}"` };
      const lines = Math.round(value);
      if (lines === 0) return { ok: true, events: [] };
      const language = text(c.attrs, "language");
      return {
        ok: true,
        events: [
          {
            ...base(c, "lines_changed"),
            ...(type === "added" ? { linesAdded: lines } : { linesRemoved: lines }),
            ...(language === undefined ? {} : { language }),
          },
        ],
      };
    }
    case "claude_code.code_edit_tool.decision": {
      const decision = text(c.attrs, "decision");
      if (decision !== "accept" && decision !== "reject")
        return { ok: false, reason: `decision: must be accept or reject, got "${decision ?? ""}"` };
      const tool = text(c.attrs, "tool_name");
      if (tool === undefined) return { ok: false, reason: "tool_name: the attribute is required" };
      const language = text(c.attrs, "language");
      return repeated(c, value, (x) => ({
        ...base(x, "edit_decision"),
        decision,
        tool,
        ...(language === undefined ? {} : { language }),
      }));
    }
    case "claude_code.session.count":
      // Claude Code says nothing of autonomy: sessions count as manual (docs/otlp.md).
      return repeated(c, value, (x) => ({ ...base(x, "session_start"), autonomyMode: "manual" }));
    case "claude_code.commit.count":
      return repeated(c, value, (x) => base(x, "git_commit"));
    case "claude_code.pull_request.count":
      return repeated(c, value, (x) => base(x, "pr_created"));
    default:
      return { ok: true, events: [] };
  }
}

/**
 * Our autonomy level of a tool call from tool_result's `source`: allowed by the configuration
 * without asking ("config") is auto-high; anything a user decided (user_temporary,
 * user_permanent, user_reject, user_abort), or no source, is manual.
 */
export function autonomyOf(attrs: Attributes): string {
  return text(attrs, "source") === "config" ? "auto-high" : "manual";
}

function tokenAttr(attrs: Attributes, key: string): number | { reason: string } {
  const v = numeric(attrs, key);
  if (v === undefined) return 0;
  if (!Number.isInteger(v) || v < 0) return { reason: `${key}: must be a whole number of tokens, got ${v}` };
  return v;
}

/** The events of one log record of a stored event. */
export function mapLogEvent(name: string, c: Common): Mapped {
  switch (name) {
    case "claude_code.user_prompt":
      return { ok: true, events: [{ ...base(c, "message"), role: "user" }] };
    case "claude_code.tool_result": {
      const tool = text(c.attrs, "tool_name");
      if (tool === undefined) return { ok: false, reason: "tool_name: the attribute is required" };
      const mcp = MCP_TOOL.exec(tool);
      return {
        ok: true,
        events: [
          {
            ...base(c, "tool_call"),
            tool,
            autonomyLevel: autonomyOf(c.attrs),
            ...(mcp ? { mcpServer: mcp[1]! } : {}),
          },
        ],
      };
    }
    case "claude_code.api_request": {
      const model = text(c.attrs, "model");
      if (model === undefined) return { ok: false, reason: "model: the attribute is required" };
      const cost = numeric(c.attrs, "cost_usd");
      const counts: number[] = [];
      for (const key of ["input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens"]) {
        const v = tokenAttr(c.attrs, key);
        if (typeof v !== "number") return { ok: false, reason: v.reason };
        counts.push(v);
      }
      return {
        ok: true,
        events: [
          {
            ...usageEvent(c, model),
            inputTokens: counts[0]!,
            outputTokens: counts[1]!,
            cacheReadTokens: counts[2]!,
            cacheWriteTokens: counts[3]!,
            ...(cost === undefined ? {} : { costUsd: cost }),
          },
        ],
      };
    }
    default:
      return { ok: true, events: [] };
  }
}
