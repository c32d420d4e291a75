// The demo's one story, which every area's demo writer tells its part of: who works when, in
// which sessions, with which messages. It is a pure function of the organization's users (those
// who may write sessions, oldest first) and the demo period, built on the analytics generator, so
// the sessions the sessions area stores are the very sessions analytics counts (same IDs, days
// and messages), users sign in before their last session, and nobody works before they joined.
import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import type { Database } from "./database.js";
import { addDays, dayOf, EARLIEST_DATE, eachDay } from "./analytics/dates.js";
import { generateTelemetry, type GeneratedUser } from "./analytics/generate.js";
import type { IncomingEvent } from "./analytics/ingest/events.js";
import type { DemoOptions } from "./platform/module.js";

/** Deterministic bytes for a name: stable IDs and repeatable "randomness". */
export function demoDigest(...parts: string[]): Buffer {
  return createHash("sha256").update(parts.join("\u0000")).digest();
}

/** A UUID named by its parts (version 5 layout): the same parts give the same ID on every run. */
export function demoUuid(...parts: string[]): string {
  const b = demoDigest(...parts);
  b[6] = (b[6]! & 0x0f) | 0x50; // version 5 layout (name-based)
  b[8] = (b[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = b.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** A number in [0, 1) named by its parts. */
export function demoFraction(...parts: string[]): number {
  return demoDigest(...parts).readUInt32BE(0) / 4294967296;
}

/** The roles whose users work in sessions (sessions/access.ts WRITERS); guests only read. */
const ACTING_ROLES = ["owner", "manager", "member"] as const;

/** The days of the demo period: `options.days` days ending yesterday (UTC), none before EARLIEST_DATE. */
export function demoDays(options: DemoOptions, nowMs: number): string[] {
  const yesterday = addDays(dayOf(nowMs), -1);
  const first = addDays(yesterday, -(Math.max(1, options.days) - 1));
  // biome-ignore lint/complexity/useMathMinMax: the values are "YYYY-MM-DD" strings compared as text; Math.max would turn them into NaN
  return eachDay(first < EARLIEST_DATE ? EARLIEST_DATE : first, yesterday);
}

/** Midnight (UTC, ms) of the demo period's first day: what users and computers predate. */
export function demoPeriodStart(options: DemoOptions, nowMs: number): number {
  return Date.parse(`${demoDays(options, nowMs)[0] ?? dayOf(nowMs)}T00:00:00Z`);
}

/** One turn of a session: the user's message, then the agent's work, then its answer. */
export interface StoryTurn {
  userAt: number;
  assistantAt: number;
  tools: string[];
  files: { op: string; path: string }[];
}

export interface StoryUsage {
  modelId: string;
  modelTier: string;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** A finished session of the period, as its telemetry tells it. */
export interface StorySession {
  id: string;
  userId: string;
  userEmail?: string;
  day: string;
  client: string;
  autonomyMode: string;
  start: number;
  /** Its last event. */
  end: number;
  turns: StoryTurn[];
  usage: StoryUsage[];
}

/** Today's session of the first user, whose question waits for a runner. */
export interface PendingSession {
  id: string;
  userId: string;
  client: string;
  autonomyMode: string;
  start: number;
  messageId: string;
  messageAt: number;
  /** Its telemetry, as the sessions service records it for a session it creates. */
  events: IncomingEvent[];
}

export interface DemoStory {
  orgId: string;
  days: string[];
  /** The users who work, oldest first, each from the day after they joined. */
  users: GeneratedUser[];
  /** The period's telemetry, a user's day at a time. */
  telemetry(): Generator<IncomingEvent[]>;
  pending: PendingSession | undefined;
}

/** The organization's users who work in sessions, oldest first. */
async function actingUsers(db: Kysely<Database>, orgId: string): Promise<GeneratedUser[]> {
  const rows = await db
    .selectFrom("users")
    .select(["id", "email", "created_at"])
    .where("org_id", "=", orgId)
    .where("role", "in", ACTING_ROLES)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map((r) => ({ id: r.id, email: r.email, activeFrom: addDays(dayOf(r.created_at), 1) }));
}

function pendingSession(orgId: string, user: GeneratedUser, nowMs: number): PendingSession {
  const id = demoUuid("demo-pending-session", orgId);
  const messageId = demoUuid("demo-pending-message", orgId);
  const start = nowMs - 20 * 60_000;
  const messageAt = start + 40_000;
  const common = { orgId, userId: user.id, sessionId: id, client: "terminal-ui" };
  return {
    id,
    userId: user.id,
    client: common.client,
    autonomyMode: "auto-medium",
    start,
    messageId,
    messageAt,
    events: [
      {
        ...common,
        type: "session_start",
        autonomyMode: "auto-medium",
        time: new Date(start).toISOString(),
        eventId: `session_start:${id}`,
      },
      {
        ...common,
        type: "message",
        role: "user",
        time: new Date(messageAt).toISOString(),
        eventId: `message:${messageId}`,
      },
    ],
  };
}

/** The story of the organization's demo: read its users, then everything else follows from them. */
export async function demoStory(
  db: Kysely<Database>,
  orgId: string,
  options: DemoOptions,
  nowMs = Date.now(),
): Promise<DemoStory> {
  const users = await actingUsers(db, orgId);
  const days = demoDays(options, nowMs);
  const first = users[0];
  return {
    orgId,
    days,
    users,
    telemetry: function* () {
      for (const userDay of generateTelemetry({
        orgId,
        users,
        days,
        idPrefix: "demo",
        codeAndCost: true,
        sessionIdOf: (u, day, s) => demoUuid("demo-session", orgId, users[u]!.id, day, String(s)),
      }))
        yield [...userDay, ...sessionsOf(userDay).flatMap((s) => subagentEvents(orgId, s))];
    },
    pending: first && first.activeFrom! <= dayOf(nowMs) ? pendingSession(orgId, first, nowMs) : undefined,
  };
}

/** The share of sessions that start a subagent. */
const SUBAGENT_SHARE = 0.3;

/** The ID of the subagent session a session started while answering its first question, if it did. */
export function subagentIdOf(sessionId: string): string | undefined {
  return demoFraction("demo-subagent", sessionId) < SUBAGENT_SHARE ? demoUuid("demo-subagent", sessionId) : undefined;
}

/**
 * The telemetry of the subagent a session started (when it did): shortly after the session's
 * first question, the subagent is asked to find the relevant code, searches and reads, and
 * reports back — on the same day, by the same user and client.
 */
function subagentEvents(orgId: string, parent: StorySession): IncomingEvent[] {
  const id = subagentIdOf(parent.id);
  const asked = parent.turns[0]?.userAt;
  if (!id || asked === undefined) return [];
  const dayEnd = Date.parse(`${parent.day}T23:59:59Z`);
  const at = (ms: number) => new Date(Math.min(asked + ms, dayEnd)).toISOString();
  const common = {
    orgId,
    userId: parent.userId,
    ...(parent.userEmail ? { userEmail: parent.userEmail } : {}),
    sessionId: id,
    client: parent.client,
  };
  const eventId = (n: number) => `demo-subagent-${id}-${n}`;
  return [
    { ...common, type: "session_start", autonomyMode: "auto-high", time: at(5_000), eventId: eventId(0) },
    { ...common, type: "message", role: "user", time: at(6_000), eventId: eventId(1) },
    { ...common, type: "tool_call", tool: "Grep", autonomyLevel: "auto-high", time: at(20_000), eventId: eventId(2) },
    { ...common, type: "tool_call", tool: "Read", autonomyLevel: "auto-high", time: at(30_000), eventId: eventId(3) },
    {
      ...common,
      type: "model_usage",
      modelId: "gpt-5-mini",
      modelTier: "standard",
      inputTokens: 4_200,
      outputTokens: 610,
      cacheReadTokens: 12_000,
      cacheWriteTokens: 0,
      time: at(50_000),
      eventId: eventId(4),
    },
    { ...common, type: "message", role: "assistant", time: at(70_000), eventId: eventId(5) },
  ];
}

/** A user's day of events (each session's in time order) as the sessions they hold. */
export function sessionsOf(events: readonly IncomingEvent[]): StorySession[] {
  const sessions = new Map<string, StorySession>();
  for (const e of events) {
    const at = Date.parse(e.time!);
    let s = sessions.get(e.sessionId!);
    if (e.type === "session_start") {
      s = {
        id: e.sessionId!,
        userId: e.userId!,
        ...(e.userEmail ? { userEmail: e.userEmail } : {}),
        day: dayOf(at),
        client: e.client!,
        autonomyMode: e.autonomyMode!,
        start: at,
        end: at,
        turns: [],
        usage: [],
      };
      sessions.set(s.id, s);
      continue;
    }
    if (!s) continue;
    s.end = at;
    const turn = s.turns.at(-1);
    if (e.type === "message" && e.role === "user") s.turns.push({ userAt: at, assistantAt: at, tools: [], files: [] });
    else if (e.type === "message" && e.role === "assistant" && turn) turn.assistantAt = at;
    else if (e.type === "tool_call" && turn) turn.tools.push(e.tool!);
    else if (e.type === "file_op" && turn) turn.files.push({ op: e.op!, path: e.path! });
    else if (e.type === "model_usage")
      s.usage.push({
        modelId: e.modelId!,
        modelTier: e.modelTier!,
        input: e.inputTokens!,
        output: e.outputTokens!,
        cacheRead: e.cacheReadTokens!,
        cacheWrite: e.cacheWriteTokens!,
      });
  }
  return [...sessions.values()];
}

/** Each working user's last session start (today's pending one included): they signed in before it. */
export function lastSessionStarts(story: DemoStory): Map<string, number> {
  const last = new Map<string, number>();
  for (const userDay of story.telemetry())
    for (const e of userDay)
      if (e.type === "session_start") last.set(e.userId!, Math.max(last.get(e.userId!) ?? 0, Date.parse(e.time!)));
  if (story.pending) last.set(story.pending.userId, story.pending.start);
  return last;
}
