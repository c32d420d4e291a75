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

/**
 * An event of `type` with the common fields set and every other field the mapping may set
 * present and undefined (which validation reads as absent), in one fixed order: every event the
 * receiver makes has one hidden class. A spread into a literal this wide was several times slower
 * to build and left validation (events.ts) reading objects in dictionary mode.
 */
function event(c: Common, type: string, eventId = c.eventId): IncomingEvent {
  return {
    type,
    time: c.time,
    orgId: c.owner.orgId,
    userId: c.owner.userId,
    userEmail: c.owner.userEmail,
    sessionId: text(c.attrs, "session.id"),
    client: clientOf(c.attrs),
    eventId,
    autonomyMode: undefined,
    role: undefined,
    modelId: undefined,
    modelTier: undefined,
    inputTokens: undefined,
    outputTokens: undefined,
    cacheReadTokens: undefined,
    cacheWriteTokens: undefined,
    costUsd: undefined,
    tool: undefined,
    autonomyLevel: undefined,
    mcpServer: undefined,
    language: undefined,
    linesAdded: undefined,
    linesRemoved: undefined,
    decision: undefined,
  };
}

/** A model_usage event of `model` with every token count 0: the caller sets what was reported. */
function usageEvent(c: Common, model: string): IncomingEvent {
  const e = event(c, "model_usage");
  e.modelId = model;
  e.modelTier = "standard";
  e.inputTokens = 0;
  e.outputTokens = 0;
  e.cacheReadTokens = 0;
  e.cacheWriteTokens = 0;
  return e;
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

/** `count` events of `type`, each with its own ID, `fill` setting their fields. */
function repeated(c: Common, count: number, type: string, fill: (e: IncomingEvent) => void = () => {}): Mapped {
  const n = Math.round(count);
  if (n < 0) return { ok: false, reason: `a count must not be negative, got ${count}` };
  if (n > MAX_EVENTS_PER_POINT)
    return { ok: false, reason: `a count above ${MAX_EVENTS_PER_POINT} in one data point is refused, got ${count}` };
  const events: IncomingEvent[] = [];
  for (let i = 0; i < n; i++) {
    const e = event(c, type, `${c.eventId}:${i}`);
    fill(e);
    events.push(e);
  }
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
      const e = usageEvent(c, model);
      e[field] = tokens;
      return { ok: true, events: [e] };
    }
    case "claude_code.cost.usage": {
      const model = text(c.attrs, "model");
      if (model === undefined) return { ok: false, reason: "model: the attribute is required" };
      if (value === 0) return { ok: true, events: [] };
      // The cost alone: the tokens arrive as claude_code.token.usage.
      const e = usageEvent(c, model);
      e.costUsd = value;
      return { ok: true, events: [e] };
    }
    case "claude_code.lines_of_code.count": {
      const type = text(c.attrs, "type");
      if (type !== "added" && type !== "removed")
        return { ok: false, reason: `type: must be added or removed, got "${type ?? ""}"` };
      const lines = Math.round(value);
      if (lines === 0) return { ok: true, events: [] };
      const e = event(c, "lines_changed");
      if (type === "added") e.linesAdded = lines;
      else e.linesRemoved = lines;
      e.language = text(c.attrs, "language");
      return { ok: true, events: [e] };
    }
    case "claude_code.code_edit_tool.decision": {
      const decision = text(c.attrs, "decision");
      if (decision !== "accept" && decision !== "reject")
        return { ok: false, reason: `decision: must be accept or reject, got "${decision ?? ""}"` };
      const tool = text(c.attrs, "tool_name");
      if (tool === undefined) return { ok: false, reason: "tool_name: the attribute is required" };
      const language = text(c.attrs, "language");
      return repeated(c, value, "edit_decision", (e) => {
        e.decision = decision;
        e.tool = tool;
        e.language = language;
      });
    }
    case "claude_code.session.count":
      // Claude Code says nothing of autonomy: sessions count as manual (docs/otlp.md).
      return repeated(c, value, "session_start", (e) => {
        e.autonomyMode = "manual";
      });
    case "claude_code.commit.count":
      return repeated(c, value, "git_commit");
    case "claude_code.pull_request.count":
      return repeated(c, value, "pr_created");
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
    case "claude_code.user_prompt": {
      const e = event(c, "message");
      e.role = "user";
      return { ok: true, events: [e] };
    }
    case "claude_code.tool_result": {
      const tool = text(c.attrs, "tool_name");
      if (tool === undefined) return { ok: false, reason: "tool_name: the attribute is required" };
      const e = event(c, "tool_call");
      e.tool = tool;
      e.autonomyLevel = autonomyOf(c.attrs);
      e.mcpServer = MCP_TOOL.exec(tool)?.[1];
      return { ok: true, events: [e] };
    }
    case "claude_code.api_request": {
      const model = text(c.attrs, "model");
      if (model === undefined) return { ok: false, reason: "model: the attribute is required" };
      const input = tokenAttr(c.attrs, "input_tokens");
      if (typeof input !== "number") return { ok: false, reason: input.reason };
      const output = tokenAttr(c.attrs, "output_tokens");
      if (typeof output !== "number") return { ok: false, reason: output.reason };
      const cacheRead = tokenAttr(c.attrs, "cache_read_tokens");
      if (typeof cacheRead !== "number") return { ok: false, reason: cacheRead.reason };
      const cacheWrite = tokenAttr(c.attrs, "cache_creation_tokens");
      if (typeof cacheWrite !== "number") return { ok: false, reason: cacheWrite.reason };
      const e = usageEvent(c, model);
      e.inputTokens = input;
      e.outputTokens = output;
      e.cacheReadTokens = cacheRead;
      e.cacheWriteTokens = cacheWrite;
      e.costUsd = numeric(c.attrs, "cost_usd");
      return { ok: true, events: [e] };
    }
    default:
      return { ok: true, events: [] };
  }
}
