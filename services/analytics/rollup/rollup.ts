// Running the rollup: for one organization, a set of days recomputed in repeatable-read
// transactions (one consistent snapshot per chunk of days, so concurrent ingest never yields a
// half-counted day; two chunks at a time), followed by the active-user windows the days
// influence. A session-level advisory lock per organization, taken before any snapshot, makes
// concurrent runs (two instances, the scheduler and `agentplane rollup`) take turns;
// recomputing is idempotent, so the second run simply produces the same rows again.
import { sql, type Kysely, type Transaction } from "kysely";
import type { Database } from "../../database.js";
import type { Logger } from "../../platform/logger.js";
import { activeWindowsThrough, organizationsToRollUp } from "./plan.js";
import { daysBetween, EARLIEST_DATE, eachDay, isDay, MAX_RANGE_DAYS } from "../dates.js";
import { invalidArgument } from "../../platform/errors.js";
import { refreshActiveWindows } from "./active-windows.js";
import { rollupDays } from "./days.js";

/** Advisory lock class of the rollup (the second key is hashtext(org_id)). */
const ROLLUP_LOCK = 727_006_002;
/**
 * Days per transaction (a week): bounds a transaction's length and each statement's work (a
 * 10,000-user organization has 1.6 million events a week), while keeping the fixed cost per
 * chunk (a dozen statements, two temporary tables, its window refresh) small.
 */
const CHUNK_DAYS = 7;
const MAX_ATTEMPTS = 4;

export interface RollupStats {
  days: number;
  events: number;
}

/** Groups sorted days into runs spanning at most CHUNK_DAYS. */
export function chunkDays(days: readonly string[]): string[][] {
  const sorted = [...new Set(days)].sort();
  const chunks: string[][] = [];
  for (const day of sorted) {
    const current = chunks[chunks.length - 1];
    if (current && daysBetween(current[0]!, day) < CHUNK_DAYS) current.push(day);
    else chunks.push([day]);
  }
  return chunks;
}

function isSerializationFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "40001" || code === "40P01";
}

async function withOrganizationLock<T>(db: Kysely<Database>, orgId: string, fn: () => Promise<T>): Promise<T> {
  return db.connection().execute(async (conn) => {
    await sql`select pg_advisory_lock(${ROLLUP_LOCK}, hashtext(${orgId}))`.execute(conn);
    try {
      return await fn();
    } finally {
      await sql`select pg_advisory_unlock(${ROLLUP_LOCK}, hashtext(${orgId}))`.execute(conn);
    }
  });
}

async function inSnapshot<T>(db: Kysely<Database>, fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().setIsolationLevel("repeatable read").execute(fn);
    } catch (err) {
      // Ingest touched a pending mark we are clearing: recompute from a fresh snapshot.
      if (!isSerializationFailure(err) || attempt >= MAX_ATTEMPTS) throw err;
    }
  }
}

/**
 * Chunks recomputed at once, each in its own transaction on its own connection: the rollup of a
 * long range uses two cores (PGlite simply runs them one after the other).
 */
const PARALLEL_CHUNKS = 2;

/**
 * Recomputes the organization's given days, then refreshes the active-user windows they affect
 * (through `through`, normally yesterday).
 */
export async function rollupOrganization(
  db: Kysely<Database>,
  orgId: string,
  days: readonly string[],
  options: { through: string; logger?: Logger },
): Promise<RollupStats> {
  const stats: RollupStats = { days: 0, events: 0 };
  await withOrganizationLock(db, orgId, async () => {
    const chunks = chunkDays(days.filter((d) => d <= options.through));
    if (chunks.length === 0) return;
    let next = 0;
    const worker = async () => {
      for (let chunk = chunks[next++]; chunk; chunk = chunks[next++]) {
        const started = Date.now();
        const [first, last] = [chunk[0]!, chunk[chunk.length - 1]!];
        const events = await inSnapshot(db, async (trx) => {
          const n = await rollupDays(trx, orgId, chunk!);
          // A lone chunk refreshes every window it affects in its own snapshot. Parallel chunks
          // refresh only their own days (the windows of the days after a chunk belong to the
          // chunk that recomputes them), and all of them are refreshed once every chunk is in.
          await refreshActiveWindows(
            trx,
            orgId,
            first,
            chunks.length === 1 ? activeWindowsThrough(last, options.through) : last,
          );
          return n;
        });
        stats.days += chunk.length;
        stats.events += events;
        options.logger?.debug(
          { orgId, from: first, to: last, events, ms: Date.now() - started },
          "analytics rollup chunk",
        );
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_CHUNKS, chunks.length) }, worker));
    if (chunks.length > 1) {
      const last = chunks[chunks.length - 1]!;
      await inSnapshot(db, (trx) =>
        refreshActiveWindows(trx, orgId, chunks[0]![0]!, activeWindowsThrough(last[last.length - 1]!, options.through)),
      );
    }
  });
  return stats;
}

/**
 * Refreshes the planner's statistics of the aggregate tables after a rollup rewrote many of their
 * rows: the endpoints' range reads (and /users paging by user ID) only pick the right index with
 * current statistics. And vacuums them: the rollup replaces a day's rows, so until the visibility
 * map is set again /users' index-only page scan visits the heap for every row (4x slower), and
 * autovacuum may take its time. Cheap next to the rollup. Must run outside a transaction.
 */
export async function analyzeAggregates(db: Kysely<Database>): Promise<void> {
  await sql`vacuum (analyze) analytics_daily, analytics_user_daily, analytics_user_model_daily`.execute(db);
}

/** Brings the active-user counts of [from, to] up to date (quiet days after activity get rows). */
export async function refreshOrganizationWindows(
  db: Kysely<Database>,
  orgId: string,
  from: string,
  to: string,
): Promise<void> {
  await withOrganizationLock(db, orgId, () => inSnapshot(db, (trx) => refreshActiveWindows(trx, orgId, from, to)));
}

// The days an on-demand rollup may cover (TelemetryService.Rollup, `agentplane rollup`): real
// days from 2026-01-14 through yesterday, from <= to, at most 366 of them.
export function parseRollupRange(
  from: string,
  to: string,
  yesterday: string,
  fields = { from: "from_date", to: "to_date" },
): { from: string; to: string } {
  const check = (value: string, field: string) => {
    if (value === "") throw invalidArgument(field, "is required (YYYY-MM-DD)");
    if (!isDay(value)) throw invalidArgument(field, `must be a date written YYYY-MM-DD, got "${value.slice(0, 40)}"`);
    if (value < EARLIEST_DATE)
      throw invalidArgument(field, `must not be before ${EARLIEST_DATE}, the first day analytics cover`);
    if (value > yesterday)
      throw invalidArgument(field, `must not be after ${yesterday}: only finished days are rolled up`);
  };
  check(from, fields.from);
  check(to, fields.to);
  if (from > to) throw invalidArgument(fields.from, `must not be after ${fields.to} (${from} > ${to})`);
  if (daysBetween(from, to) + 1 > MAX_RANGE_DAYS)
    throw invalidArgument(fields.to, `the range may span at most ${MAX_RANGE_DAYS} days`);
  return { from, to };
}

/**
 * `agentplane rollup` and TelemetryService.Rollup: recomputes every day of [from, to] for one
 * organization, or for every organization the range concerns.
 */
export async function rollupRange(
  db: Kysely<Database>,
  range: { from: string; to: string; orgId?: string | undefined },
  options: { through: string; logger?: Logger },
): Promise<RollupStats> {
  const orgs = range.orgId ? [range.orgId] : await organizationsToRollUp(db, range.from, range.to);
  const days = eachDay(range.from, range.to);
  const total: RollupStats = { days: 0, events: 0 };
  for (const orgId of orgs) {
    const s = await rollupOrganization(db, orgId, days, options);
    total.events += s.events;
  }
  total.days = days.length;
  if (total.events > 0) await analyzeAggregates(db);
  return total;
}
