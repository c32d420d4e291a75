// Repository functions for session rows. Those that lock the row, or write under its lock, take a
// Transaction (the lock lasts until it ends); the rest take an Executor and run either way.
//
// Every change that a client can see on a session (a message, settings, status) goes through
// `touchSession`, inside the transaction that holds the session's row lock. It stamps the session
// with the writing transaction's ID and records the position the session had before in
// session_list_history; list-queries.ts pages over that (see there).
import { newId } from "../platform/ids.js";
import { sql, type Insertable, type Transaction, type Updateable } from "kysely";
import type { Database, Executor } from "../database.js";
import { changeEvents, insertSessionEvents, notifySessionWatchers } from "./event-queries.js";
import type { MessageRow, SessionRow, SessionStatus, SessionsTable, StoredSettings } from "./tables.js";

/** History older than this is pruned; no listing may continue a snapshot older than LIST_SNAPSHOT_MAX_AGE_MS. */
export const LIST_HISTORY_RETENTION_MS = 24 * 60 * 60 * 1000;

/** The session if it exists in the organization and, when `ownerId` is given, belongs to that user. */
export async function findSession(
  db: Executor,
  orgId: string,
  sessionId: string,
  ownerId?: string,
): Promise<SessionRow | undefined> {
  let q = db.selectFrom("sessions").selectAll().where("org_id", "=", orgId).where("id", "=", sessionId);
  if (ownerId !== undefined) q = q.where("user_id", "=", ownerId);
  return q.executeTakeFirst();
}

/** A session by ID alone, in any organization (runner calls: the caller checks the organization). */
export async function findSessionById(db: Executor, sessionId: string): Promise<SessionRow | undefined> {
  return db.selectFrom("sessions").selectAll().where("id", "=", sessionId).executeTakeFirst();
}

/** The sessions among `ids` that the organization holds, with their parents. */
export async function findSessionsAmong(
  db: Executor,
  orgId: string,
  ids: readonly string[],
): Promise<Pick<SessionRow, "id" | "parent_session_id">[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom("sessions")
    .select(["id", "parent_session_id"])
    .where("org_id", "=", orgId)
    .where("id", "in", ids)
    .execute();
}

/** A session row locked for a write, with the database clock read in the same statement. */
export type LockedSession = SessionRow & { locked_at: Date };

/** Like findSession, and takes the row lock until the transaction ends. */
export async function lockSession(
  trx: Transaction<Database>,
  orgId: string,
  sessionId: string,
  ownerId?: string,
): Promise<LockedSession | undefined> {
  let q = trx
    .selectFrom("sessions")
    .selectAll()
    .select(sql<Date>`clock_timestamp()`.as("locked_at"))
    .where("org_id", "=", orgId)
    .where("id", "=", sessionId);
  if (ownerId !== undefined) q = q.where("user_id", "=", ownerId);
  return q.forUpdate().executeTakeFirst();
}

/** Locks a session by ID alone (runner calls, which prove access with a lease token). */
export async function lockSessionById(
  trx: Transaction<Database>,
  sessionId: string,
): Promise<LockedSession | undefined> {
  return trx
    .selectFrom("sessions")
    .selectAll()
    .select(sql<Date>`clock_timestamp()`.as("locked_at"))
    .where("id", "=", sessionId)
    .forUpdate()
    .executeTakeFirst();
}

/**
 * The time of a write to a locked session, as lockedNow gives it but without another round trip:
 * the clock read with the lock (if the lock had to wait for a writer, Postgres re-reads the row
 * and the clock after it), never earlier than the session's last write.
 */
export function writeTime(locked: LockedSession): Date {
  return new Date(Math.max(locked.locked_at.getTime(), locked.updated_at.getTime()));
}

/**
 * The database clock now, never earlier than `notBefore`: timestamps taken under a session's row
 * lock then only move forward, so the order rows were written in and their times agree.
 */
export async function lockedNow(trx: Executor, notBefore?: Date): Promise<Date> {
  const { now } = await sql<{ now: Date }>`select clock_timestamp() as now`.execute(trx).then((r) => r.rows[0]!);
  const ms = Math.max(now.getTime(), notBefore?.getTime() ?? 0);
  return new Date(ms);
}

/** The ID of the writing transaction (xid8): what a listing's snapshot is compared with. */
const writingTransaction = () => sql<string>`pg_current_xact_id()`;

export interface NewSession {
  id?: string;
  orgId: string;
  userId: string;
  parentSessionId: string | null;
  title: string | null;
  computerId: string | null;
  settings: StoredSettings;
  client: string;
  autonomyMode: string;
  /** Explicit times for demo data; otherwise the database clock. */
  createdAt?: Date;
}

export async function insertSession(
  trx: Executor,
  init: NewSession,
  extra: Partial<Insertable<SessionsTable>> = {},
): Promise<SessionRow> {
  const createdAt = init.createdAt ?? (await lockedNow(trx));
  const id = init.id ?? newId();
  return trx
    .insertInto("sessions")
    .values({
      id,
      org_id: init.orgId,
      user_id: init.userId,
      parent_session_id: init.parentSessionId,
      // A child belongs to its parent's tree. A parent outside the organization gives null, which
      // the column refuses: no tree spans two organizations.
      root_id:
        init.parentSessionId === null
          ? id
          : sql<string>`(select p.root_id from sessions p where p.id = ${init.parentSessionId} and p.org_id = ${init.orgId})`,
      title: init.title,
      computer_id: init.computerId,
      status: "idle",
      settings: JSON.stringify(init.settings),
      client: init.client,
      autonomy_mode: init.autonomyMode,
      created_at: createdAt,
      updated_at: createdAt,
      list_xid: writingTransaction(),
      ...extra,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Applies `changes` to a session the transaction has locked, moves it to the top of the list
 * (updated_at = `at`) and records its previous list position, in one statement. Must be the
 * transaction's last write to the session. Takes no lock beyond the session's own row: a listing
 * tells which changes it saw from their transaction IDs (list-queries.ts), so writes to different
 * sessions of an organization do not wait for each other. `created` are the messages the
 * transaction stored, for their message.created events.
 */
export async function touchSession(
  trx: Transaction<Database>,
  row: SessionRow,
  at: Date,
  changes: Updateable<SessionsTable> = {},
  created: readonly MessageRow[] = [],
): Promise<SessionRow> {
  // Its events (a status change, the messages `created` stored): recorded here, where every
  // visible change passes, so that no change is missing from the event stream.
  const events = changeEvents(row.status, changes.status as SessionStatus | undefined, created);
  if (events.length > 0) changes = { ...changes, last_event_seq: await insertSessionEvents(trx, row, at, events) };
  const prunedBefore = new Date(at.getTime() - LIST_HISTORY_RETENTION_MS);
  return (
    trx
      .with("recorded", (db) =>
        db.insertInto("session_list_history").values({
          org_id: row.org_id,
          session_id: row.id,
          old_updated_at: row.updated_at,
          old_xid: row.list_xid,
          new_xid: writingTransaction(),
        }),
      )
      // Only positions superseded long ago are pruned: no live listing can still need them.
      .with("pruned", (db) =>
        db
          .deleteFrom("session_list_history")
          .where("session_id", "=", row.id)
          .where("superseded_at", "<", prunedBefore),
      )
      .updateTable("sessions")
      .set({ ...changes, updated_at: at, list_xid: writingTransaction() })
      .where("id", "=", row.id)
      .returningAll()
      .executeTakeFirstOrThrow()
  );
}

/**
 * Deletes a session the transaction has locked, with its messages, their attachments and its
 * child sessions (the foreign keys cascade). Telemetry events are analytics' and stay.
 */
export async function deleteSession(trx: Transaction<Database>, row: Pick<SessionRow, "id">): Promise<void> {
  await trx.deleteFrom("sessions").where("id", "=", row.id).execute();
  // Its event streams end (they find it gone). A child's watchers are not told: theirs end at
  // their next heartbeat, when they re-read.
  await notifySessionWatchers(trx, row.id);
}
