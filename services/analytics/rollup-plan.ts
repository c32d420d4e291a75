// Which organizations and days a rollup covers.
import { sql } from "kysely";
import type { Executor } from "../database.js";
import { addDays } from "./dates.js";

/** A day's activity counts in the monthly window of the 29 days after it. */
export function activeWindowsThrough(lastDay: string, through: string): string {
  const end = addDays(lastDay, 29);
  return end < through ? end : through;
}

/**
 * Organizations a rollup of [from, to] must visit: those with raw events in the range, and those
 * with aggregates in it or in the 29 days before (their rows, or their quiet days' active-user
 * counts, may change).
 */
export async function organizationsToRollUp(db: Executor, from: string, to: string): Promise<string[]> {
  const result = await sql<{ org_id: string }>`
    select org_id from analytics_events
    where occurred_at >= ${`${from}T00:00:00Z`}::timestamptz and occurred_at < ${`${addDays(to, 1)}T00:00:00Z`}::timestamptz
    union
    select org_id from analytics_daily where day between ${addDays(from, -29)}::date and ${to}::date
    union
    select org_id from analytics_pending_days where day between ${from}::date and ${to}::date`.execute(db);
  return result.rows.map((r) => r.org_id).sort();
}

/** Organizations with raw events on the day (the scheduler's daily sweep). */
export async function organizationsWithEvents(db: Executor, day: string): Promise<string[]> {
  const result = await sql<{ org_id: string }>`
    select distinct org_id from analytics_events
    where occurred_at >= ${`${day}T00:00:00Z`}::timestamptz and occurred_at < ${`${addDays(day, 1)}T00:00:00Z`}::timestamptz`.execute(db);
  return result.rows.map((r) => r.org_id);
}

/** Organizations active in the 30 days ending the day: their quiet days need active-user counts. */
export async function organizationsActiveAround(db: Executor, day: string): Promise<string[]> {
  const result = await sql<{ org_id: string }>`
    select distinct org_id from analytics_daily where day between ${addDays(day, -29)}::date and ${day}::date and daily_active_users > 0`.execute(db);
  return result.rows.map((r) => r.org_id);
}

/** Past days that received events after (or before any) rollup, by organization, through `through`. */
export async function pendingDays(db: Executor, through: string): Promise<Map<string, string[]>> {
  const result = await sql<{ org_id: string; day: string }>`
    select distinct org_id, day from analytics_pending_days where day <= ${through}::date order by org_id, day`.execute(db);
  const byOrg = new Map<string, string[]>();
  for (const r of result.rows) {
    const list = byOrg.get(r.org_id) ?? [];
    list.push(r.day);
    byOrg.set(r.org_id, list);
  }
  return byOrg;
}
