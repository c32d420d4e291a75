// Paging GET /sessions: newest first by updatedAt (ties: sessionId descending), and each session
// exactly once per listing even while sessions are being updated.
//
// updated_at changes whenever a message is posted, so a plain keyset on it would let a session
// that is updated mid-listing jump over the cursor (seen twice) or be skipped when it jumps from
// below the cursor to above it. Instead a listing pages over a snapshot: the first page is read
// in one statement, whose MVCC snapshot (pg_current_snapshot()) the cursor keeps. Every change
// that moves a session records the ID of its transaction (touchSession: list_xid on the session,
// and on the history row the transaction that gave the old position and the one that replaced
// it), and pg_visible_in_snapshot tells whether the first page saw a change: exactly when that
// transaction had committed before it. A session's changes commit one after another under its
// row lock, so the changes a snapshot saw are a prefix of its history. Its position in the
// listing is therefore its updated_at as of the snapshot: the current one when list_xid is
// visible, else the old_updated_at of the history row whose old transaction is visible and whose
// new one is not. Sessions created after the snapshot are not in the listing (a fresh listing
// shows them). Items show their current fields; only their order is that of the snapshot.
//
// (Before migration 0009 a per-organization list clock gave the versions, and its row lock,
// held until commit, serialised every session write of the organization.)
import { sql } from "kysely";
import type { Executor } from "../database.js";
import { invalidArgument } from "../platform/errors.js";
import { LIST_HISTORY_RETENTION_MS } from "./session-queries.js";
import type { SessionRow, UsageColumns } from "./tables.js";
import { treeJsonOf, type TreeMemberJson } from "./tree-queries.js";

/** Cursor position: the snapshot and the last item's place in it. */
export interface SessionListPosition {
  /** The snapshot (pg_snapshot as text: xmin:xmax:xip,...). */
  snap: string;
  /** Unix ms at which the snapshot was taken. */
  takenAt: number;
  /** Position (updated_at as of the snapshot, Unix ms) and ID of the last item. */
  at: number;
  id: string;
}

/** A listing may continue for 12 hours; history is kept twice as long. */
export const LIST_SNAPSHOT_MAX_AGE_MS = LIST_HISTORY_RETENTION_MS / 2;

export interface SessionListFilter {
  orgId: string;
  /** Only this user's sessions (members and guests). */
  ownerId?: string | undefined;
  computerId?: string | undefined;
}

/**
 * A listed session: the columns its list item and its usage are built from (times as Unix ms:
 * parsing timestamps into Dates was a good part of a list request's CPU), its position in the
 * snapshot, and, on the first row of each tree in the page, the rest of that tree (treeJsonOf).
 */
export type SessionListRow = Pick<
  SessionRow,
  "id" | "parent_session_id" | "title" | "computer_id" | "message_count" | "settings" | UsageColumns
> & {
  created_ms: number;
  updated_ms: number;
  completed_ms: number | null;
  /** updated_at as of the snapshot, Unix ms. */
  position_ms: number;
  tree: TreeMemberJson[] | null;
  snapshot: string;
  snapshot_taken_ms: number;
};

export interface SessionListPage {
  rows: SessionListRow[];
  /** The snapshot the page belongs to. */
  snapshot: { snap: string; takenAt: number };
}

export async function listSessionsPage(
  db: Executor,
  filter: SessionListFilter,
  limit: number,
  after?: SessionListPosition,
): Promise<SessionListPage> {
  if (after && Date.now() - after.takenAt > LIST_SNAPSHOT_MAX_AGE_MS) {
    throw invalidArgument(
      "cursor",
      "continues a listing that began more than 12 hours ago; start again without a cursor",
    );
  }
  // A cursor of the previous release (a clock version) cannot be continued.
  if (after && typeof after.snap !== "string")
    throw invalidArgument("cursor", "was issued by an earlier version of the service; start again without a cursor");
  const snapshot = after ? sql`${after.snap}::pg_snapshot` : sql`pg_current_snapshot()`;
  const owner = filter.ownerId === undefined ? sql`` : sql`and s.user_id = ${filter.ownerId}`;
  const computer = filter.computerId === undefined ? sql`` : sql`and s.computer_id = ${filter.computerId}`;
  const afterCurrent = after
    ? sql`and (s.updated_at, s.id) < (${new Date(after.at)}::timestamptz, ${after.id})`
    : sql``;
  const afterHistoric = after
    ? sql`and (h.old_updated_at, s.id) < (${new Date(after.at)}::timestamptz, ${after.id})`
    : sql``;
  // One statement, so the sessions, their history and their trees are read in the snapshot the
  // listing keeps. Only the columns a list item shows are read.
  const ms = (column: string) => sql`(extract(epoch from ${sql.ref(column)}) * 1000)::float8`;
  const result = await sql<SessionListRow>`
    with snap as materialized (select ${snapshot} as s, clock_timestamp() as taken_at),
    unchanged as (
      select s.id, s.updated_at as position_at from sessions s, snap
      where s.org_id = ${filter.orgId} and pg_visible_in_snapshot(s.list_xid, snap.s) ${owner} ${computer} ${afterCurrent}
      order by s.updated_at desc, s.id desc limit ${limit}
    ),
    changed as (
      -- Transactions below the snapshot's xmin are all visible: the index range skips their rows.
      select s.id, h.old_updated_at as position_at
      from session_list_history h join sessions s on s.id = h.session_id, snap
      where h.org_id = ${filter.orgId} and h.new_xid >= pg_snapshot_xmin(snap.s)
        and not pg_visible_in_snapshot(h.new_xid, snap.s) and pg_visible_in_snapshot(h.old_xid, snap.s)
        and not pg_visible_in_snapshot(s.list_xid, snap.s) ${owner} ${computer} ${afterHistoric}
    ),
    page as (
      select * from (select * from unchanged union all select * from changed) p
      order by position_at desc, id desc limit ${limit}
    )
    select s.id, s.parent_session_id, s.title, s.computer_id, s.message_count, s.settings, s.input_tokens, s.output_tokens,
           s.cache_creation_tokens, s.cache_read_tokens, s.thinking_tokens, s.factory_credits,
           ${ms("s.created_at")} as created_ms, ${ms("s.updated_at")} as updated_ms, ${ms("s.completed_at")} as completed_ms,
           ${ms("page.position_at")} as position_ms, snap.s::text as snapshot, ${ms("snap.taken_at")} as snapshot_taken_ms,
           case when row_number() over (partition by s.root_id order by page.position_at desc, page.id desc) = 1
                then ${treeJsonOf("s")} end as tree
    from page join sessions s on s.id = page.id, snap
    order by page.position_at desc, page.id desc`.execute(db);
  const first = result.rows[0];
  // An empty first page needs no snapshot: it has no next page.
  const taken = after
    ? { snap: after.snap, takenAt: after.takenAt }
    : { snap: first?.snapshot ?? "", takenAt: first?.snapshot_taken_ms ?? Date.now() };
  return { rows: result.rows, snapshot: taken };
}
