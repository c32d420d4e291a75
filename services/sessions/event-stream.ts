// One watcher of a session's events (GET /api/v0/sessions/{id}/events, WatchSessionEvents):
// the stored events after a position, then each new one as it is stored, read from Postgres
// whenever a wake-up says the session may have changed (event-wakeups.ts). Quiet for
// HEARTBEAT_MS, it yields a heartbeat (the SSE comment that keeps proxies from closing an idle
// connection) and reads again, so a lost wake-up delays an event by at most that. It ends when
// the session is gone or `signal` aborts (the client left, the server is stopping).
import type { Executor } from "../database.js";
import { sessionEventsAfter } from "./event-queries.js";
import { POLL_MS, type SessionWakeups } from "./event-wakeups.js";
import type { SessionEventRow } from "./tables.js";

export const HEARTBEAT_MS = 15_000;
/** Events read per query. */
const BATCH = 100;

export type StreamItem = { kind: "event"; event: SessionEventRow } | { kind: "heartbeat" };

export interface EventStreamOptions {
  db: Executor;
  wakeups: SessionWakeups;
  sessionId: string;
  /** Yield the events after this one. */
  afterSeq: number;
  signal: AbortSignal;
  heartbeatMs?: number;
}

/** The session's last event number, or undefined once it is deleted. */
async function lastEventSeq(db: Executor, sessionId: string): Promise<number | undefined> {
  const row = await db.selectFrom("sessions").select("last_event_seq").where("id", "=", sessionId).executeTakeFirst();
  return row?.last_event_seq;
}

export async function* sessionEventStream(options: EventStreamOptions): AsyncGenerator<StreamItem> {
  const { db, sessionId, signal } = options;
  const heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS;
  const wakeup = options.wakeups.subscribe(sessionId);
  try {
    let after = options.afterSeq;
    let quietSince = performance.now();
    while (!signal.aborted) {
      const last = await lastEventSeq(db, sessionId);
      if (last === undefined) return;
      while (after < last && !signal.aborted) {
        const events = await sessionEventsAfter(db, sessionId, after, BATCH);
        if (events.length === 0) break;
        for (const event of events) {
          yield { kind: "event", event };
          after = event.seq;
        }
        quietSince = performance.now();
      }
      const untilHeartbeat = heartbeatMs - (performance.now() - quietSince);
      if (untilHeartbeat <= 0) {
        yield { kind: "heartbeat" };
        quietSince = performance.now();
        continue;
      }
      await wakeup.wait(wakeup.listening() ? untilHeartbeat : Math.min(untilHeartbeat, POLL_MS), signal);
    }
  } finally {
    wakeup.close();
  }
}
