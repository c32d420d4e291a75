// The telemetry event vocabulary of ANALYTICS.md and the validation of one event into the row we
// store. The same rules serve every way in: TelemetryService.Ingest, `agentplane ingest` and the
// platform's own TelemetrySink.
import type { Message } from "@bufbuild/protobuf";
import type { TelemetryEvent } from "../../../gen/agentplane/analytics/v1/analytics_pb.js";
import { EARLIEST_DATE } from "../dates.js";

export const EVENT_TYPES = [
  "session_start",
  "message",
  "model_usage",
  "tool_call",
  "skill",
  "slash_command",
  "hook",
  "file_op",
  "git_commit",
  "pr_created",
  "lines_changed",
  "edit_decision",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const CLIENTS = ["terminal-ui", "web", "non-interactive-cli"] as const;
export const AUTONOMY_MODES = ["auto-high", "auto-medium", "auto-low", "spec", "manual"] as const;
export const AUTONOMY_LEVELS = ["auto-high", "auto-medium", "auto-low", "manual"] as const;
export const ROLES = ["user", "assistant"] as const;
export const MODEL_TIERS = ["standard", "thinking"] as const;
export const FILE_OPS = ["created", "edited"] as const;
export const EDIT_DECISIONS = ["accept", "reject"] as const;

/**
 * Where a stored event came from (analytics_events.source; not a field of the event itself):
 * our own format (TelemetryService.Ingest, `agentplane ingest`, the platform's TelemetrySink),
 * or an OpenTelemetry metric data point or log record mapped onto our format by the OTLP
 * receiver. The rollup uses it to count tokens reported both ways once (rollup/plan.ts).
 */
export const EVENT_SOURCES = ["native", "otlp_metric", "otlp_log"] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

/**
 * An event as it arrives: the generated TelemetryEvent message's fields (camelCase), all optional,
 * so that the RPC's messages, the CLI's JSON lines and the platform's own events (TelemetrySink)
 * are all one.
 */
export type IncomingEvent = Partial<Omit<TelemetryEvent, keyof Message>>;

/** A valid event, as stored in analytics_events (fields of other types are null). */
export interface EventRow {
  orgId: string;
  occurredAt: Date;
  userId: string;
  userEmail: string | null;
  sessionId: string | null;
  client: string;
  type: EventType;
  autonomy: string | null;
  role: string | null;
  modelId: string | null;
  modelTier: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  cacheReadTokens: number | null;
  cacheWriteTokens: number | null;
  tool: string | null;
  mcpServer: string | null;
  name: string | null;
  hookEvent: string | null;
  hookMatcher: string | null;
  hookCommand: string | null;
  op: string | null;
  path: string | null;
  extension: string | null;
  language: string | null;
  eventId: string | null;
  /** lines_changed: both set (0 when the event left one out). */
  linesAdded: number | null;
  linesRemoved: number | null;
  /** edit_decision: accept or reject. */
  decision: string | null;
  /** model_usage: the cost the client reported for this usage, in US dollars (null: not reported). */
  costUsd: number | null;
  source: EventSource;
}

export type Validation = { ok: true; row: EventRow } | { ok: false; reason: string };

/** Events may run this far ahead of our clock (client clock skew); later ones are rejected. */
export const MAX_CLOCK_SKEW_MS = 24 * 60 * 60 * 1000;
const MAX_ID = 256;
const MAX_TEXT = 1024;
const MAX_PATH = 4096;
/** Largest token count an event may carry (and so a model usage report, which becomes one). */
export const MAX_TOKENS = 1e15;
/** Largest line count a lines_changed event may carry. */
export const MAX_LINES = 1e12;
/** Largest cost one model_usage event may report, in US dollars. */
export const MAX_COST_USD = 1e9;

// RFC 3339 date-time (with the lower-case t/z and space separator RFC 3339 §5.6 allows).
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const EARLIEST_MS = Date.parse(`${EARLIEST_DATE}T00:00:00Z`);

class Invalid extends Error {}

function fail(field: string, problem: string): never {
  throw new Invalid(`${field}: ${problem}`);
}

function requiredText(value: string | undefined, field: string, max = MAX_TEXT): string {
  if (value === undefined || value === "") fail(field, "is required");
  return storableText(value, field, max);
}

/** Optional strings: absent and "" both mean "not set". */
function optionalText(value: string | undefined, field: string, max = MAX_TEXT): string | null {
  if (value === undefined || value === "") return null;
  return storableText(value, field, max);
}

/**
 * A string Postgres can store as text: within the length limit, and without U+0000, which no
 * Postgres text value can hold (stored as is, it would fail the batch's whole statement).
 */
function storableText(value: string, field: string, max: number): string {
  if (value.length > max) fail(field, `must be at most ${max} characters`);
  if (value.includes("\u0000")) fail(field, "must not contain the NUL character (U+0000)");
  return value;
}

function oneOf<T extends string>(value: string | undefined, field: string, allowed: readonly T[]): T {
  if (value === undefined || value === "") fail(field, `is required (one of ${allowed.join(", ")})`);
  if (!(allowed as readonly string[]).includes(value))
    fail(field, `must be one of ${allowed.join(", ")}, got "${value.slice(0, 40)}"`);
  return value as T;
}

function tokenCount(value: number | undefined, field: string): number {
  if (value === undefined) fail(field, "is required");
  if (!Number.isInteger(value) || value < 0 || value > MAX_TOKENS)
    fail(field, `must be an integer from 0 to ${MAX_TOKENS}, got ${value}`);
  return value;
}

/** An optional line count: absent means 0 (a client reports added and removed lines apart). */
function lineCount(value: number | undefined, field: string): number {
  if (value === undefined) return 0;
  if (!Number.isInteger(value) || value < 0 || value > MAX_LINES)
    fail(field, `must be an integer from 0 to ${MAX_LINES}, got ${value}`);
  return value;
}

/** An optional amount of US dollars: finite, >= 0; null when absent. */
function optionalCost(value: number | undefined, field: string): number | null {
  if (value === undefined) return null;
  if (!Number.isFinite(value) || value < 0 || value > MAX_COST_USD)
    fail(field, `must be a number of US dollars from 0 to ${MAX_COST_USD}, got ${value}`);
  return value;
}

/** Days in each month of a common year (February of a leap year is checked apart). */
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The value of the two ASCII digits at i, or NaN when either is not a digit. */
function twoDigits(text: string, i: number): number {
  const a = text.charCodeAt(i) - 48;
  const b = text.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : NaN;
}

/**
 * The Unix ms of the form nearly every client sends, `YYYY-MM-DDTHH:MM:SSZ` or with `.sss`
 * before the Z, valid fields only, read without a regular expression or Date parsing (ingest
 * parses millions); undefined for anything else, which parseTimestamp then reads in full.
 */
function parseCanonicalUtc(text: string): number | undefined {
  const length = text.length;
  if (length !== 20 && length !== 24) return undefined;
  if (
    text.charCodeAt(4) !== 45 ||
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 84 ||
    text.charCodeAt(13) !== 58 ||
    text.charCodeAt(16) !== 58 ||
    text.charCodeAt(length - 1) !== 90
  )
    return undefined;
  const y = twoDigits(text, 0) * 100 + twoDigits(text, 2);
  const mo = twoDigits(text, 5);
  const d = twoDigits(text, 8);
  const h = twoDigits(text, 11);
  const mi = twoDigits(text, 14);
  const s = twoDigits(text, 17);
  let ms = 0;
  if (length === 24) {
    const m3 = text.charCodeAt(22) - 48;
    if (text.charCodeAt(19) !== 46 || !(m3 >= 0 && m3 <= 9)) return undefined;
    ms = twoDigits(text, 20) * 10 + m3;
  }
  // NaN fails every comparison, so a non-digit anywhere ends here too.
  if (!(y >= 1000 && mo >= 1 && mo <= 12 && d >= 1 && h <= 23 && mi <= 59 && s <= 59 && ms >= 0)) return undefined;
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  if (d > (mo === 2 && leap ? 29 : MONTH_DAYS[mo - 1]!)) return undefined;
  return Date.UTC(y, mo - 1, d, h, mi, s, ms);
}

/** Parses an RFC 3339 timestamp (rejecting impossible dates such as February 30). */
export function parseTimestamp(text: string): Date | undefined {
  const canonical = parseCanonicalUtc(text);
  if (canonical !== undefined) return new Date(canonical);
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m;
  const ms = Date.parse(text.toUpperCase().replace(" ", "T"));
  if (Number.isNaN(ms)) return undefined;
  // Date.parse rolls 2026-02-30 over to March: check the fields against a UTC reconstruction.
  const probe = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)));
  if (
    probe.getUTCFullYear() !== Number(y) ||
    probe.getUTCMonth() !== Number(mo) - 1 ||
    probe.getUTCDate() !== Number(d)
  )
    return undefined;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined;
  return new Date(ms);
}

/**
 * The lower-case extension of a file path without the dot, or "" when it has none. Both path
 * separators count; a leading dot names a hidden file, not an extension (".gitignore" → "").
 */
export function extensionOf(path: string): string {
  const base = path.slice(Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\")) + 1);
  const dot = base.lastIndexOf(".");
  return dot <= 0 ? "" : base.slice(dot + 1).toLowerCase();
}

/** A row with only the common fields set. One object literal with every field in a fixed order:
 * it keeps one hidden class (a spread into a literal this wide was 20x slower). */
function emptyRow(
  type: EventType,
  occurredAt: Date,
  orgId: string,
  userId: string,
  userEmail: string | null,
  sessionId: string | null,
  client: string,
  eventId: string | null,
  source: EventSource,
): EventRow {
  return {
    orgId,
    occurredAt,
    userId,
    userEmail,
    sessionId,
    client,
    type,
    autonomy: null,
    role: null,
    modelId: null,
    modelTier: null,
    inputTokens: null,
    outputTokens: null,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    tool: null,
    mcpServer: null,
    name: null,
    hookEvent: null,
    hookMatcher: null,
    hookCommand: null,
    op: null,
    path: null,
    extension: null,
    language: null,
    eventId,
    linesAdded: null,
    linesRemoved: null,
    decision: null,
    costUsd: null,
    source,
  };
}

function toRow(e: IncomingEvent, nowMs: number, source: EventSource): EventRow {
  const type = oneOf(e.type, "type", EVENT_TYPES);
  const timeText = requiredText(e.time, "time", 64);
  const occurredAt = parseTimestamp(timeText);
  if (!occurredAt) fail("time", `must be an RFC 3339 timestamp such as 2026-03-01T12:00:00Z, got "${timeText}"`);
  if (occurredAt.getTime() < EARLIEST_MS)
    fail("time", `must not be before ${EARLIEST_DATE}, the first day analytics cover`);
  if (occurredAt.getTime() > nowMs + MAX_CLOCK_SKEW_MS) fail("time", "is more than a day in the future");
  const row = emptyRow(
    type,
    occurredAt,
    requiredText(e.orgId, "org_id", MAX_ID),
    requiredText(e.userId, "user_id", MAX_ID),
    optionalText(e.userEmail, "user_email", MAX_ID),
    optionalText(e.sessionId, "session_id", MAX_ID),
    oneOf(e.client, "client", CLIENTS),
    optionalText(e.eventId, "event_id", MAX_ID),
    source,
  );
  switch (type) {
    case "session_start":
      row.autonomy = oneOf(e.autonomyMode, "autonomy_mode", AUTONOMY_MODES);
      break;
    case "message":
      row.role = oneOf(e.role, "role", ROLES);
      break;
    case "model_usage":
      row.modelId = requiredText(e.modelId, "model_id", MAX_ID);
      row.modelTier = oneOf(e.modelTier, "model_tier", MODEL_TIERS);
      row.inputTokens = tokenCount(e.inputTokens, "input_tokens");
      row.outputTokens = tokenCount(e.outputTokens, "output_tokens");
      row.cacheReadTokens = tokenCount(e.cacheReadTokens, "cache_read_tokens");
      row.cacheWriteTokens = tokenCount(e.cacheWriteTokens, "cache_write_tokens");
      row.costUsd = optionalCost(e.costUsd, "cost_usd");
      break;
    case "tool_call":
      row.tool = requiredText(e.tool, "tool");
      row.autonomy = oneOf(e.autonomyLevel, "autonomy_level", AUTONOMY_LEVELS);
      row.mcpServer = optionalText(e.mcpServer, "mcp_server");
      break;
    case "skill":
    case "slash_command":
      row.name = requiredText(e.name, "name");
      break;
    case "hook":
      row.hookEvent = requiredText(e.event, "event");
      // A hook on an event without tools (Stop, Notification) has no matcher.
      row.hookMatcher = storableText(e.matcher ?? "", "matcher", MAX_TEXT);
      row.hookCommand = requiredText(e.command, "command");
      break;
    case "file_op":
      row.op = oneOf(e.op, "op", FILE_OPS);
      row.path = requiredText(e.path, "path", MAX_PATH);
      row.extension = extensionOf(row.path);
      row.language = requiredText(e.language, "language");
      break;
    case "git_commit":
    case "pr_created":
      break;
    case "lines_changed":
      // Either count may be left out (0): OpenTelemetry clients report added and removed lines
      // as separate data points. An event that changes nothing is a mistake, not a zero.
      row.linesAdded = lineCount(e.linesAdded, "lines_added");
      row.linesRemoved = lineCount(e.linesRemoved, "lines_removed");
      if (row.linesAdded === 0 && row.linesRemoved === 0) fail("lines_added", "or lines_removed must be more than 0");
      row.path = optionalText(e.path, "path", MAX_PATH);
      row.extension = row.path === null ? null : extensionOf(row.path);
      row.language = optionalText(e.language, "language");
      break;
    case "edit_decision":
      row.decision = oneOf(e.decision, "decision", EDIT_DECISIONS);
      row.tool = requiredText(e.tool, "tool");
      row.language = optionalText(e.language, "language");
      break;
  }
  return row;
}

export interface ValidateOptions {
  /** Where the event came from; native unless the OTLP receiver says otherwise. */
  source?: EventSource;
}

/** Validates one event; the reason names the field first ("time: must be ..."). */
export function validateEvent(event: IncomingEvent, nowMs = Date.now(), options: ValidateOptions = {}): Validation {
  try {
    return { ok: true, row: toRow(event, nowMs, options.source ?? "native") };
  } catch (err) {
    if (err instanceof Invalid) return { ok: false, reason: err.message };
    throw err;
  }
}
