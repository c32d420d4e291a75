// Whether a server still holds event streams open, seen from Postgres: a process keeps one
// LISTEN connection (application_name LISTENER_NAME) while at least one of its session event
// streams is open and closes it with the last (services/sessions/event-wakeups.ts). A fuzz that
// cancels thousands of streams checks with it that every cancel really ended a stream on the
// server, instead of leaving it to pile up until the server stops.
import { type Kysely, sql } from "kysely";
import { LISTENER_NAME } from "../../../services/sessions/event-wakeups.js";

/** LISTEN connections of session event streams on the database `db` is connected to. */
export async function eventListeners(db: Kysely<any>): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and application_name = ${LISTENER_NAME}`.execute(db);
  return rows[0]!.n;
}

/** Waits until `count` holds of the listeners, or `ms` pass; returns the last count seen. */
export async function waitForListeners(db: Kysely<any>, count: (n: number) => boolean, ms = 10_000): Promise<number> {
  const started = Date.now();
  for (;;) {
    const n = await eventListeners(db);
    if (count(n) || Date.now() - started > ms) return n;
    await new Promise((r) => setTimeout(r, 100));
  }
}
