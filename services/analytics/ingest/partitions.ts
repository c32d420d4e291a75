// Monthly range partitions of analytics_events, created on demand before events of a new month
// are stored. Creation is serialized by a transaction-scoped advisory lock, so concurrent ingests
// (or two instances) never race on the same CREATE TABLE.
import { sql, type Kysely, type Transaction } from "kysely";
import type { Database } from "../../database.js";

/** Advisory lock class of partition creation (the second key is the month, yyyymm). */
const PARTITION_LOCK = 727_006_001;

/** "2026-03" for an instant (UTC). */
export function monthOf(instant: Date): string {
  return instant.toISOString().slice(0, 7);
}

/** The distinct months of the rows' instants. */
export function monthsOf(rows: ReadonlyArray<{ occurredAt: Date }>): string[] {
  return monthsOfInstants(rows.map((r) => r.occurredAt.getTime()));
}

/**
 * The distinct months of instants (Unix ms). They come in runs of one month: the current month's
 * bounds are kept, and only an instant outside them is formatted.
 */
export function monthsOfInstants(instants: readonly number[]): string[] {
  const months: string[] = [];
  let from = Infinity;
  let to = -Infinity;
  for (const ms of instants) {
    if (ms >= from && ms < to) continue;
    const month = monthOf(new Date(ms));
    if (!months.includes(month)) months.push(month);
    from = Date.parse(`${month}-01T00:00:00Z`);
    to = Date.parse(`${nextMonth(month)}-01T00:00:00Z`);
  }
  return months;
}

export function partitionName(month: string): string {
  return `analytics_events_${month.replace("-", "_")}`;
}

function nextMonth(month: string): string {
  const [y, m] = month.split("-").map(Number) as [number, number];
  return m === 12 ? `${y + 1}-01` : `${y}-${String(m + 1).padStart(2, "0")}`;
}

/**
 * Creates the partitions of the given months that do not exist yet, in the transaction given (a
 * caller's transaction keeps the creation inside it; the advisory lock lasts until its end).
 * Returns the months created.
 */
export async function createMissingPartitions(db: Transaction<Database>, months: Iterable<string>): Promise<string[]> {
  const created: string[] = [];
  for (const month of new Set(months)) {
    const name = partitionName(month);
    const exists = await sql<{ oid: string | null }>`select to_regclass(${name})::text as oid`.execute(db);
    if (exists.rows[0]?.oid) continue;
    const key = Number(month.replace("-", ""));
    await sql`select pg_advisory_xact_lock(${PARTITION_LOCK}, ${key})`.execute(db);
    // Another transaction may have created it while we waited for the lock.
    await sql`
      create table if not exists ${sql.table(name)} partition of analytics_events
      for values from (${sql.lit(`${month}-01T00:00:00Z`)}) to (${sql.lit(`${nextMonth(month)}-01T00:00:00Z`)})`.execute(
      db,
    );
    created.push(month);
  }
  return created;
}

/**
 * Partitions known to exist, per database handle: the ingest hot path checks the catalog once
 * per month and process. (Not for callers' transactions, whose creation could still roll back:
 * they call createMissingPartitions directly.)
 */
const known = new WeakMap<Kysely<Database>, Set<string>>();

export async function ensurePartitions(db: Kysely<Database>, months: Iterable<string>): Promise<void> {
  let seen = known.get(db);
  if (!seen) known.set(db, (seen = new Set()));
  const missing = [...new Set(months)].filter((m) => !seen.has(m));
  if (missing.length === 0) return;
  // Own transaction: the advisory lock is transaction-scoped and the DDL commits at once.
  await db.transaction().execute((trx) => createMissingPartitions(trx, missing));
  for (const m of missing) seen.add(m);
}
