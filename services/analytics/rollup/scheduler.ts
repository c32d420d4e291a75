// The rollup schedule (a module Worker): shortly after midnight UTC it rolls up the day before
// for every organization with events that day; at start it catches up every day since the last
// sweep it recorded; every hour it also rolls up past days that received late events (ingest
// marks them pending). Two instances may run it at once: the per-organization lock in rollup.ts
// makes them take turns and the work is idempotent.
import { sql, type Kysely } from "kysely";
import type { Database } from "../../database.js";
import type { Logger } from "../../platform/logger.js";
import type { Worker } from "../../platform/module.js";
import { addDays, dayOf, EARLIEST_DATE } from "../dates.js";
import { ensurePartitions, monthOf } from "../ingest/partitions.js";
import { organizationsActiveAround, organizationsWithEvents, pendingDays } from "./plan.js";
import { analyzeAggregates, refreshOrganizationWindows, rollupOrganization } from "./rollup.js";

/** Minutes after each hour a tick runs (00:05 UTC is the daily sweep). */
export const TICK_MINUTE = 5;
/** A first start catches up at most this many days. */
const MAX_CATCH_UP_DAYS = 400;

export interface SweepStats {
  /** Days swept for every organization. */
  days: string[];
  /** (organization, swept day) pairs visited. */
  organizationDays: number;
  events: number;
}

/**
 * Sweeps one finished day for every organization: those with events on it, those with pending
 * late days, and those active in the 30 days before it (their quiet day's active-user counts).
 */
export async function sweepDay(
  db: Kysely<Database>,
  day: string,
  through: string,
  logger?: Logger,
): Promise<{ organizations: number; events: number }> {
  const [withEvents, pending, active] = await Promise.all([
    organizationsWithEvents(db, day),
    pendingDays(db, through),
    organizationsActiveAround(db, day),
  ]);
  const orgs = new Set([...withEvents, ...pending.keys(), ...active]);
  const hasEvents = new Set(withEvents);
  let events = 0;
  for (const orgId of [...orgs].sort()) {
    const days = [...(hasEvents.has(orgId) ? [day] : []), ...(pending.get(orgId) ?? [])];
    if (days.length > 0)
      events += (await rollupOrganization(db, orgId, days, { through, ...(logger ? { logger } : {}) })).events;
    // A quiet day still has weekly and monthly active users.
    if (!hasEvents.has(orgId)) await refreshOrganizationWindows(db, orgId, day, day);
  }
  await sql`insert into analytics_rollup_runs (day) values (${day}::date) on conflict (day) do update set finished_at = now()`.execute(
    db,
  );
  return { organizations: orgs.size, events };
}

/** Rolls up late (pending) days only. */
export async function rollupPending(db: Kysely<Database>, through: string, logger?: Logger): Promise<number> {
  const pending = await pendingDays(db, through);
  let events = 0;
  for (const [orgId, days] of pending)
    events += (await rollupOrganization(db, orgId, days, { through, ...(logger ? { logger } : {}) })).events;
  return events;
}

/** The first day not swept yet: the day after the last recorded sweep, else the oldest partition's month. */
async function firstUnsweptDay(db: Kysely<Database>, yesterday: string): Promise<string> {
  const last = await sql<{ day: string | null }>`select max(day) as day from analytics_rollup_runs`.execute(db);
  const floor = [EARLIEST_DATE, addDays(yesterday, -MAX_CATCH_UP_DAYS + 1)].sort().pop()!;
  if (last.rows[0]?.day) return [addDays(last.rows[0].day, 1), floor].sort().pop()!;
  const oldest = await sql<{ name: string | null }>`
    select min(c.relname) as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'analytics_events'::regclass`.execute(db);
  const m = /(\d{4})_(\d{2})$/.exec(oldest.rows[0]?.name ?? "");
  return m ? [`${m[1]}-${m[2]}-01`, floor].sort().pop()! : yesterday;
}

/** One tick: every unswept finished day (oldest first), then late days; keeps partitions ahead. */
export async function runTick(db: Kysely<Database>, nowMs: number, logger?: Logger): Promise<SweepStats> {
  const today = dayOf(nowMs);
  const yesterday = addDays(today, -1);
  // The current and next month's partitions, so the sink rarely creates one inside a caller's transaction.
  await ensurePartitions(db, [
    monthOf(new Date(nowMs)),
    monthOf(new Date(Date.parse(`${today.slice(0, 7)}-01T00:00:00Z`) + 32 * 86_400_000)),
  ]);
  const stats: SweepStats = { days: [], organizationDays: 0, events: 0 };
  for (let day = await firstUnsweptDay(db, yesterday); day <= yesterday; day = addDays(day, 1)) {
    const s = await sweepDay(db, day, yesterday, logger);
    stats.days.push(day);
    stats.organizationDays += s.organizations;
    stats.events += s.events;
  }
  stats.events += await rollupPending(db, yesterday, logger);
  if (stats.events > 0) await analyzeAggregates(db);
  return stats;
}

/** Milliseconds from `nowMs` to the next HH:05 UTC. */
export function msUntilNextTick(nowMs: number): number {
  const hour = 3_600_000;
  const offset = TICK_MINUTE * 60_000;
  const next = Math.floor((nowMs - offset) / hour) * hour + hour + offset;
  return next - nowMs;
}

export function startRollupScheduler(db: Kysely<Database>, logger: Logger, now: () => number = Date.now): Worker {
  const log = logger.child({ component: "analytics-rollup" });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const tick = () => {
    if (stopped || running) return;
    running = (async () => {
      const started = Date.now();
      try {
        const stats = await runTick(db, now(), log);
        if (stats.days.length > 0 || stats.events > 0)
          log.info({ ...stats, ms: Date.now() - started }, "analytics rollup done");
      } catch (err) {
        log.error({ err }, "analytics rollup failed; retrying at the next tick");
      } finally {
        running = undefined;
      }
    })();
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      tick();
      schedule();
    }, msUntilNextTick(now()));
    timer.unref();
  };

  tick(); // catch up at start
  schedule();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
