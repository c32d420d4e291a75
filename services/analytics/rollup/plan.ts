// Which organizations and days a rollup covers, and which raw events make a day.
import { sql, type RawBuilder, type Selectable } from "kysely";
import type { Executor } from "../../database.js";
import { addDays } from "../dates.js";
import type { PendingDaysTable } from "../tables.js";

// The predicate that picks an organization's UTC day of raw events, for every reader of a day
// (the rollup, the credit balance). The day's expression is the one of the (org_id, UTC day)
// index (migration 0012), written once here so that no reader drifts off it and scans instead.
// The range on occurred_at says the same; it is there for the partitions, which are ranges of
// occurred_at: the executor skips every month but the day's.
/**
 * `alias`'s rows of the organization on `day` (a SQL date expression, such as a column of the
 * row source the events are joined to).
 */
export function rawEventsOfDay(alias: string, orgId: string, day: RawBuilder<unknown>): RawBuilder<unknown> {
  const e = sql.raw(alias);
  return sql`${e}.org_id = ${orgId} and (${e}.occurred_at at time zone 'UTC')::date = ${day}
    and ${e}.occurred_at >= (${day}::timestamp at time zone 'UTC') and ${e}.occurred_at < ((${day} + 1)::timestamp at time zone 'UTC')`;
}

/**
 * Whether `alias`'s row of the organization's `day` counts (the double-count rule): a client that
 * exports both the token-usage metric and the api_request log events reports the same tokens
 * twice, so a model_usage row from an OpenTelemetry metric (source otlp_metric) counts only when
 * the same session (session_id; rows without one form one group) has no model_usage row from a
 * log record (otlp_log) that day: the events win, being per request and carrying the model.
 * Every other row counts. The session ids of the day's log usage are read once per day into a
 * hash table, and only when an otlp_metric row asks (the left operands short-circuit): native
 * rows never run the subquery.
 */
export function countedEvent(alias: string, orgId: string, day: RawBuilder<unknown>): RawBuilder<unknown> {
  const e = sql.raw(alias);
  return sql`not (${e}.type = 'model_usage' and ${e}.source = 'otlp_metric' and coalesce(${e}.session_id, '') in (
    select coalesce(l.session_id, '') from analytics_events l
    where ${rawEventsOfDay("l", orgId, day)} and l.type = 'model_usage' and l.source = 'otlp_log'))`;
}

/** A day's activity counts in the monthly window of the 29 days after it. */
export function activeWindowsThrough(lastDay: string, through: string): string {
  const end = addDays(lastDay, 29);
  return end < through ? end : through;
}

/**
 * Organizations with raw events on a day of [from, to], each found by one descent of the
 * (org_id, UTC day) index (migration 0012) past the one before: a skip scan, which Postgres 15
 * does not do by itself. Reading the range's rows instead (a DISTINCT over occurred_at) visits
 * every event of those days: for the daily sweep, every event of the month's partition.
 */
export async function organizationsWithRawEvents(db: Executor, from: string, to: string): Promise<string[]> {
  // The UTC day expression is the index's; the occurred_at range prunes the partitions.
  const ofRange = sql`(e.occurred_at at time zone 'UTC')::date between ${from}::date and ${to}::date
    and e.occurred_at >= ${`${from}T00:00:00Z`}::timestamptz and e.occurred_at < ${`${addDays(to, 1)}T00:00:00Z`}::timestamptz`;
  const result = await sql<{ org_id: string }>`
    with recursive orgs(org_id) as (
      (select e.org_id from analytics_events e where ${ofRange} order by e.org_id limit 1)
      union all
      select (select e.org_id from analytics_events e where e.org_id > o.org_id and ${ofRange} order by e.org_id limit 1)
      from orgs o where o.org_id is not null
    )
    select org_id from orgs where org_id is not null`.execute(db);
  return result.rows.map((r) => r.org_id);
}

/**
 * Organizations a rollup of [from, to] must visit: those with raw events in the range, and those
 * with aggregates in it or in the 29 days before (their rows, or their quiet days' active-user
 * counts, may change).
 */
export async function organizationsToRollUp(db: Executor, from: string, to: string): Promise<string[]> {
  const [withEvents, others] = await Promise.all([
    organizationsWithRawEvents(db, from, to),
    sql<{ org_id: string }>`
      select org_id from analytics_daily where day between ${addDays(from, -29)}::date and ${to}::date
      union
      select org_id from analytics_pending_days where day between ${from}::date and ${to}::date`.execute(db),
  ]);
  return [...new Set([...withEvents, ...others.rows.map((r) => r.org_id)])].sort();
}

/** Organizations with raw events on the day (the scheduler's daily sweep). */
export async function organizationsWithEvents(db: Executor, day: string): Promise<string[]> {
  return organizationsWithRawEvents(db, day, day);
}

/** Organizations active in the 30 days ending the day: their quiet days need active-user counts. */
export async function organizationsActiveAround(db: Executor, day: string): Promise<string[]> {
  const result = await sql<{ org_id: string }>`
    select distinct org_id from analytics_daily where day between ${addDays(day, -29)}::date and ${day}::date and daily_active_users > 0`.execute(
    db,
  );
  return result.rows.map((r) => r.org_id);
}

/** Past days that received events after (or before any) rollup, by organization, through `through`. */
export async function pendingDays(db: Executor, through: string): Promise<Map<string, string[]>> {
  const result = await sql<Pick<Selectable<PendingDaysTable>, "org_id" | "day">>`
    select distinct org_id, day from analytics_pending_days where day <= ${through}::date order by org_id, day`.execute(
    db,
  );
  const byOrg = new Map<string, string[]>();
  for (const r of result.rows) {
    const list = byOrg.get(r.org_id) ?? [];
    list.push(r.day);
    byOrg.set(r.org_id, list);
  }
  return byOrg;
}
