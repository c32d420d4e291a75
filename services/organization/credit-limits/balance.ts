// Month-to-date Standard Credits of users, from the analytics data (docs/metrics.md, "/tokens"),
// for CreditLimitService.GetCreditBalance and the public limits reads (standing.ts). Days the
// rollup has finished come from analytics_user_daily; the others (today, yesterday before its
// rollup, a past day that received late events and waits for a new rollup) are summed from the raw
// model_usage events with the same formula, so the figure is current and nothing counts twice. One
// statement: one snapshot, consistent even while a rollup commits.
import { sql } from "kysely";
import { countedEvent, rawEventsOfDay } from "../../analytics/rollup/plan.js";
import type { Executor } from "../../database.js";

/** First day of `now`'s UTC month and of the next one, YYYY-MM-DD. */
export function monthBounds(now: Date): { start: string; next: string } {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const iso = (d: Date) => d.toISOString().slice(0, 10);
  return { start: iso(new Date(Date.UTC(y, m, 1))), next: iso(new Date(Date.UTC(y, m + 1, 1))) };
}

export async function creditsUsedThisMonth(db: Executor, orgId: string, userId: string, now: Date): Promise<number> {
  return (await creditsUsedThisMonthByUser(db, orgId, [userId], now)).get(userId) ?? 0;
}

/** creditsUsedThisMonth of several users of one organization (a listed page), in one statement. */
export async function creditsUsedThisMonthByUser(
  db: Executor,
  orgId: string,
  userIds: readonly string[],
  now: Date,
): Promise<Map<string, number>> {
  if (userIds.length === 0) return new Map();
  const { start, next } = monthBounds(now);
  const ids = sql`array[${sql.join(userIds)}]::text[]`;
  const result = await sql<{ user_id: string; used: number | string | null }>`
    with rolled as (
      select d.day from analytics_daily d
      where d.org_id = ${orgId} and d.day >= ${start}::date and d.day < ${next}::date
        and not exists (select 1 from analytics_pending_days p where p.org_id = d.org_id and p.day = d.day)
    ),
    from_rollup as (
      select u.user_id, sum(u.billable_tokens) as credits from analytics_user_daily u
      where u.org_id = ${orgId} and u.user_id = any(${ids}) and u.day in (select day from rolled)
      group by u.user_id
    ),
    -- The month's days not rolled up (today, and any day waiting for its rollup), each read as
    -- keys of the raw model_usage events' (org_id, UTC day, user_id) index (migration 0015):
    -- only these users' usage of those days, not the organization's day or month.
    unrolled as (
      select g.day::date as day from generate_series(${start}::date, ${next}::date - 1, interval '1 day') as g(day)
      where g.day::date not in (select day from rolled)
    ),
    from_events as (
      select day_credits.user_id, sum(day_credits.credits) as credits
      from unrolled u
      cross join lateral (
        select e.user_id, sum((e.input_tokens + e.output_tokens + e.cache_write_tokens + e.cache_read_tokens * 0.1) * coalesce(m.multiplier, 1)) as credits
        from analytics_events e
        left join analytics_credit_multipliers m on m.model_id = e.model_id
        where ${rawEventsOfDay("e", orgId, sql.raw("u.day"))} and e.user_id = any(${ids}) and e.type = 'model_usage'
          and ${countedEvent("e", orgId, sql.raw("u.day"))}
        group by e.user_id
      ) day_credits
      group by day_credits.user_id
    )
    select ids.user_id, coalesce(r.credits, 0) + coalesce(e.credits, 0) as used
    from unnest(${ids}) as ids(user_id)
    left join from_rollup r on r.user_id = ids.user_id
    left join from_events e on e.user_id = ids.user_id`.execute(db);
  return new Map(result.rows.map((r) => [r.user_id, Number(r.used ?? 0)]));
}
