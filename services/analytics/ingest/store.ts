// Writing validated events in bulk, never a statement per event. A batch is written in three
// steps, each a statement per chunk of rows:
// 1. its event_ids are claimed (idempotency on (org_id, event_id), analytics_event_ids);
// 2. the rows whose claim succeeded, and those without an id, are stored, in the order of the
//    index the rollup reads by (OTLP usage points of one model and time as one row: usage-points.ts);
// 3. the past days that received them are marked for the next rollup.
// Large chunks travel by COPY in Postgres's binary format (pg-copy.ts) where the database takes
// it, and then the rows are sorted and encoded while the server inserts the claims; small
// chunks, and every chunk on the embedded PGlite, go as parallel arrays the server unnests
// (pg-arrays.ts).
import { sql, type Selectable, type Transaction } from "kysely";
import type { Database, Executor } from "../../database.js";
import { violatedConstraint } from "../../platform/errors.js";
import { dayOf } from "../dates.js";
import { doubleArray, integerArray, textArray } from "./pg-arrays.js";
import { BinaryCopyWriter, copyInto, startCopy } from "./pg-copy.js";
import type { EventIdsTable } from "../tables.js";
import type { EventRow } from "./events.js";
import { mergeUsagePoints } from "./usage-points.js";

/** Rows per chunk: large enough to amortize round trips, small enough to bound memory. */
const CHUNK = 10_000;
/** Chunks smaller than this go as arrays even where COPY works: fewer round trips. */
const COPY_MIN_ROWS = 100;

const pairKey = (orgId: string, id: string) => `${orgId}\u0000${id}`;
export const membershipKey = pairKey;

/** The (org_id, user_id) pairs among these that are members: the user belongs to the organization. */
export async function findMemberships(
  db: Executor,
  pairs: ReadonlyArray<readonly [string, string]>,
): Promise<Set<string>> {
  const found = new Set<string>();
  if (pairs.length === 0) return found;
  const result = await sql<Pick<Selectable<Database["users"]>, "org_id" | "id">>`
    select u.org_id, u.id
    from unnest(${pairs.map((p) => p[0])}::text[], ${pairs.map((p) => p[1])}::text[]) as p(org_id, user_id)
    join users u on u.org_id = p.org_id and u.id = p.user_id`.execute(db);
  for (const r of result.rows) found.add(pairKey(r.org_id, r.id));
  return found;
}

const text = (values: ReadonlyArray<string | null>) => sql`${textArray(values)}::text[]`;
const ints = (values: ReadonlyArray<number | null>) => sql`${integerArray(values)}::bigint[]`;
const doubles = (values: ReadonlyArray<number | null>) => sql`${doubleArray(values)}::float8[]`;

/** The order of claims (claimsOf): by event_id, then org_id, as plain UTF-16 strings. */
function byClaim(a: EventRow, b: EventRow): number {
  return a.eventId! < b.eventId!
    ? -1
    : a.eventId! > b.eventId!
      ? 1
      : a.orgId < b.orgId
        ? -1
        : a.orgId > b.orgId
          ? 1
          : 0;
}

/**
 * The batch's rows with an event_id, in one fixed order, the same for every writer (byClaim,
 * computed here, not by the server's collation): two batches that claim some of the same ids
 * take their locks in the same order and cannot deadlock. A key repeated within the batch is
 * one event sent twice: the sort is stable, so the first row of each run of equal keys is the
 * batch's first and is claimed; the others are duplicates, never stored.
 */
function claimsOf(rows: readonly EventRow[]): { claims: EventRow[]; duplicates: Set<EventRow> } {
  const sorted = rows.filter((r) => r.eventId !== null).sort(byClaim);
  const claims: EventRow[] = [];
  const duplicates = new Set<EventRow>();
  let previous: EventRow | null = null;
  for (const r of sorted) {
    if (previous !== null && r.eventId === previous.eventId && r.orgId === previous.orgId) duplicates.add(r);
    else claims.push((previous = r));
  }
  return { claims, duplicates };
}

/** The claims' unique key refused an id: it was claimed before, or by a concurrent batch. */
function isClaimConflict(err: unknown): boolean {
  return violatedConstraint(err) === "analytics_event_ids_pkey";
}

/**
 * Claims the ids, each for the first batch that stores it. The usual case, ids never seen
 * before, takes the cheap path: a plain insert (COPY or arrays) of every claim. If any id was
 * claimed before (a resent event) or is claimed by a concurrent batch meanwhile, that insert
 * fails on the unique key and is undone to a savepoint (so a caller's transaction survives);
 * then ON CONFLICT DO NOTHING claims what is free and tells which. Returns null when every
 * claim succeeded, else the keys (pairKey) claimed now. With COPY, `meanwhile` runs while the
 * server inserts the claims (it is not run otherwise).
 */
async function claimIds(
  db: Transaction<Database>,
  claims: readonly EventRow[],
  copy: boolean,
  meanwhile?: () => void,
): Promise<Set<string> | null> {
  if (claims.length === 0) return null;
  await sql`savepoint analytics_claim_ids`.execute(db);
  try {
    if (copy) {
      const w = new BinaryCopyWriter(claims.length * 96);
      for (const r of claims) {
        w.row(2);
        w.text(r.orgId);
        w.text(r.eventId);
      }
      const statement = "copy analytics_event_ids (org_id, event_id) from stdin (format binary)";
      const { done } = await startCopy(db, statement, w.finish());
      meanwhile?.();
      await done;
    } else {
      await sql`
        insert into analytics_event_ids (org_id, event_id)
        select org_id, event_id from unnest(${text(claims.map((r) => r.orgId))}, ${text(claims.map((r) => r.eventId))}) with ordinality as x(org_id, event_id, n)
        order by n`.execute(db);
    }
    await sql`release savepoint analytics_claim_ids`.execute(db);
    return null;
  } catch (err) {
    if (!isClaimConflict(err)) throw err;
    await sql`rollback to savepoint analytics_claim_ids`.execute(db);
  }
  const claimed = await sql<Selectable<EventIdsTable>>`
    insert into analytics_event_ids (org_id, event_id)
    select org_id, event_id from unnest(${text(claims.map((r) => r.orgId))}, ${text(claims.map((r) => r.eventId))}) with ordinality as x(org_id, event_id, n)
    order by n
    on conflict do nothing
    returning org_id, event_id`.execute(db);
  await sql`release savepoint analytics_claim_ids`.execute(db);
  return new Set(claimed.rows.map((r) => pairKey(r.org_id, r.event_id)));
}

/** The analytics_events columns, in the order both write paths give them. */
const EVENT_COLUMNS =
  "org_id, occurred_at, user_id, user_email, session_id, client, type, event_id, " +
  "autonomy, role, model_id, model_tier, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, " +
  "tool, mcp_server, name, hook_event, hook_matcher, hook_command, op, path, extension, language, " +
  "lines_added, lines_removed, decision, cost_usd, source";

/** The rows as binary COPY data, in EVENT_COLUMNS order. */
function eventsCopyData(rows: readonly EventRow[]): Buffer {
  // About 330 bytes a row (31 length words, ids, times, a few type fields): room without regrowing.
  const w = new BinaryCopyWriter(rows.length * 416);
  for (const r of rows) {
    w.row(31);
    w.text(r.orgId);
    w.timestamptz(r.occurredAt.getTime());
    w.text(r.userId);
    w.text(r.userEmail);
    w.text(r.sessionId);
    w.text(r.client);
    w.text(r.type);
    w.text(r.eventId);
    w.text(r.autonomy);
    w.text(r.role);
    w.text(r.modelId);
    w.text(r.modelTier);
    w.int8(r.inputTokens);
    w.int8(r.outputTokens);
    w.int8(r.cacheReadTokens);
    w.int8(r.cacheWriteTokens);
    w.text(r.tool);
    w.text(r.mcpServer);
    w.text(r.name);
    w.text(r.hookEvent);
    w.text(r.hookMatcher);
    w.text(r.hookCommand);
    w.text(r.op);
    w.text(r.path);
    w.text(r.extension);
    w.text(r.language);
    w.int8(r.linesAdded);
    w.int8(r.linesRemoved);
    w.text(r.decision);
    w.float8(r.costUsd);
    w.text(r.source);
  }
  return w.finish();
}

/** The rows as one insert of unnested arrays, one per column, in EVENT_COLUMNS order. */
async function insertEventArrays(db: Executor, rows: readonly EventRow[]): Promise<void> {
  const t = (pick: (r: EventRow) => string | null) => text(rows.map(pick));
  const n = (pick: (r: EventRow) => number | null) => ints(rows.map(pick));
  const times = sql`${textArray(rows.map((r) => r.occurredAt.toISOString()))}::timestamptz[]`;
  await sql`
    insert into analytics_events (${sql.raw(EVENT_COLUMNS)})
    select * from unnest(
      ${t((r) => r.orgId)}, ${times}, ${t((r) => r.userId)}, ${t((r) => r.userEmail)}, ${t((r) => r.sessionId)},
      ${t((r) => r.client)}, ${t((r) => r.type)}, ${t((r) => r.eventId)},
      ${t((r) => r.autonomy)}, ${t((r) => r.role)}, ${t((r) => r.modelId)}, ${t((r) => r.modelTier)},
      ${n((r) => r.inputTokens)}, ${n((r) => r.outputTokens)}, ${n((r) => r.cacheReadTokens)}, ${n((r) => r.cacheWriteTokens)},
      ${t((r) => r.tool)}, ${t((r) => r.mcpServer)}, ${t((r) => r.name)}, ${t((r) => r.hookEvent)}, ${t((r) => r.hookMatcher)}, ${t((r) => r.hookCommand)},
      ${t((r) => r.op)}, ${t((r) => r.path)}, ${t((r) => r.extension)}, ${t((r) => r.language)},
      ${n((r) => r.linesAdded)}, ${n((r) => r.linesRemoved)}, ${t((r) => r.decision)}, ${doubles(rows.map((r) => r.costUsd))},
      ${t((r) => r.source)})`.execute(db);
}

const DAY_MS = 86_400_000;

/** The row's UTC day as a number of days since 1970-01-01. */
const dayNumber = (r: EventRow) => Math.floor(r.occurredAt.getTime() / DAY_MS);

/**
 * The distinct (organization, day) pairs before `today` among the rows. In no particular order:
 * their marks are new rows that lock nothing (markPending).
 */
function pastDays(rows: readonly EventRow[], today: string): Array<[string, string]> {
  const todayNumber = Date.parse(`${today}T00:00:00Z`) / DAY_MS;
  const pairs = new Map<string, [string, number]>();
  let lastOrg = "";
  let lastDay = NaN;
  for (const r of rows) {
    const day = dayNumber(r);
    if (day >= todayNumber || (day === lastDay && r.orgId === lastOrg)) continue;
    lastOrg = r.orgId;
    lastDay = day;
    pairs.set(`${r.orgId}\u0000${day}`, [r.orgId, day]);
  }
  return [...pairs.values()].map(([orgId, day]) => [orgId, new Date(day * DAY_MS).toISOString().slice(0, 10)]);
}

/**
 * Marks the days pending: a new mark per day, never an update of an earlier one (migration
 * 0013), so concurrent batches of one day take no lock on each other. The rollup deletes the
 * marks its snapshot sees; this batch's mark, committed with its events, is seen with them.
 */
async function markPending(db: Executor, days: ReadonlyArray<[string, string]>): Promise<void> {
  if (days.length === 0) return;
  await sql`
    insert into analytics_pending_days (org_id, day)
    select * from unnest(${text(days.map((d) => d[0]))}, ${sql`${textArray(days.map((d) => d[1]))}::date[]`})`.execute(
    db,
  );
}

/** The order of stored rows: the key of the (org_id, UTC day) index the rollup reads by. */
function byOrgAndDay(a: EventRow, b: EventRow): number {
  if (a.orgId !== b.orgId) return a.orgId < b.orgId ? -1 : 1;
  return dayNumber(a) - dayNumber(b);
}

/** Rows to store, a statement's worth per chunk, each with its COPY data when it goes by COPY. */
type PreparedEvents = Array<{ rows: EventRow[]; data: Buffer | null }>;

/**
 * The rows in chunks, by the (org_id, UTC day) index's key: the rows of one key go one after
 * the other, each landing in the index where the one before did, in a page at hand, and an
 * organization's day lies together in the table for the rollup. Within a key the sort is stable:
 * rows keep the batch's order, which sends one user's or session's events together (a client's
 * batch, or a file written user by user), and the COPY encoder then copies their repeated ids
 * from the row before instead of encoding them again. Chunks that go by COPY are encoded here.
 * OTLP usage points alike but for their counts and costs become one row first (usage-points.ts);
 * every one of them was claimed.
 */
function prepareEvents(unordered: readonly EventRow[], copy: boolean): PreparedEvents {
  const rows = mergeUsagePoints(unordered).slice().sort(byOrgAndDay);
  const chunks: PreparedEvents = [];
  for (let i = 0; i < rows.length; i += CHUNK) {
    const chunk = rows.slice(i, i + CHUNK);
    chunks.push({ rows: chunk, data: copy && chunk.length >= COPY_MIN_ROWS ? eventsCopyData(chunk) : null });
  }
  return chunks;
}

async function insertEvents(db: Transaction<Database>, prepared: PreparedEvents): Promise<void> {
  for (const { rows, data } of prepared) {
    if (data) await copyInto(db, `copy analytics_events (${EVENT_COLUMNS}) from stdin (format binary)`, data);
    else await insertEventArrays(db, rows);
  }
}

export interface StoreOptions {
  /** The database takes COPY FROM STDIN (pg-copy.ts supportsCopy). */
  copy?: boolean;
}

/**
 * Stores valid, member-checked rows inside the caller's transaction (the claims take savepoints,
 * and a COPY needs the transaction's own connection). Returns how many were stored; the others
 * were duplicates. Past days that received events are marked pending; today's need no mark (the
 * scheduler sweeps yesterday after midnight).
 */
export async function storeEvents(
  db: Transaction<Database>,
  rows: readonly EventRow[],
  today = dayOf(Date.now()),
  options: StoreOptions = {},
): Promise<number> {
  const copy = options.copy === true;
  const { claims, duplicates } = claimsOf(rows);
  // The rows are sorted and encoded while the server inserts the last chunk of claims, as if
  // every claim will succeed (the usual case); when some fail, again without the duplicates.
  let prepared: PreparedEvents | null = null;
  const prepare = () => (prepared = prepareEvents(rows, copy));
  for (let i = 0; i < claims.length; i += CHUNK) {
    const chunk = claims.slice(i, i + CHUNK);
    const last = i + CHUNK >= claims.length;
    const claimed = await claimIds(
      db,
      chunk,
      copy && chunk.length >= COPY_MIN_ROWS,
      last && duplicates.size === 0 ? prepare : undefined,
    );
    if (claimed !== null) for (const r of chunk) if (!claimed.has(pairKey(r.orgId, r.eventId!))) duplicates.add(r);
  }
  const stored = duplicates.size === 0 ? rows : rows.filter((r) => !duplicates.has(r));
  if (stored.length === 0) return 0;
  await insertEvents(db, duplicates.size === 0 && prepared ? prepared : prepareEvents(stored, copy));
  await markPending(db, pastDays(stored, today));
  return stored.length;
}
