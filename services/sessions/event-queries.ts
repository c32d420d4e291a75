// The session_events table (migration 0017): a session's events, numbered within the session
// under its row lock, and a notification at commit on SESSION_EVENTS_CHANNEL naming the session,
// which wakes the event streams watching it on every replica (event-wakeups.ts).
import { sql, type Transaction } from "kysely";
import type { Database, Executor } from "../database.js";
import type {
  MessageRow,
  SessionEventData,
  SessionEventRow,
  SessionEventType,
  SessionRow,
  SessionStatus,
} from "./tables.js";

export const SESSION_EVENTS_CHANNEL = "agentplane_session_events";

export interface NewSessionEvent {
  type: SessionEventType;
  data: SessionEventData;
}

/**
 * The events of a change to a session: a message.created per new message, then a
 * session.status_changed when its status changes.
 */
export function changeEvents(
  previous: SessionStatus,
  next: SessionStatus | undefined,
  messages: readonly Pick<MessageRow, "id" | "role">[],
): NewSessionEvent[] {
  const events: NewSessionEvent[] = messages.map((m) => ({
    type: "message.created",
    data: { messageId: m.id, role: m.role },
  }));
  if (next !== undefined && next !== previous)
    events.push({ type: "session.status_changed", data: { status: next, previousStatus: previous } });
  return events;
}

/**
 * Stores `events` after the session's last one, all at `at`, and notifies at commit. The caller
 * holds the session's row lock and writes the returned number to sessions.last_event_seq.
 */
export async function insertSessionEvents(
  trx: Transaction<Database>,
  session: Pick<SessionRow, "id" | "org_id" | "last_event_seq">,
  at: Date,
  events: readonly NewSessionEvent[],
): Promise<number> {
  if (events.length === 0) return session.last_event_seq;
  await trx
    .insertInto("session_events")
    .values(
      events.map((e, i) => ({
        session_id: session.id,
        seq: session.last_event_seq + i + 1,
        org_id: session.org_id,
        type: e.type,
        created_at: at,
        data: JSON.stringify(e.data),
      })),
    )
    .execute();
  await notifySessionWatchers(trx, session.id);
  return session.last_event_seq + events.length;
}

/** Wakes the session's watchers at commit (a deleted session's watchers end). */
export async function notifySessionWatchers(trx: Executor, sessionId: string): Promise<void> {
  await sql`select pg_notify(${SESSION_EVENTS_CHANNEL}, ${sessionId})`.execute(trx);
}

/** The session's events after `afterSeq`, oldest first, at most `limit`. */
export async function sessionEventsAfter(
  db: Executor,
  sessionId: string,
  afterSeq: number,
  limit: number,
): Promise<SessionEventRow[]> {
  return db
    .selectFrom("session_events")
    .selectAll()
    .where("session_id", "=", sessionId)
    .where("seq", ">", afterSeq)
    .orderBy("seq")
    .limit(limit)
    .execute();
}
