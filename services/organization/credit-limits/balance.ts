// Month-to-date Standard Credits of one user, from the analytics data (ANALYTICS.md "Credits"),
// for CreditLimitService.GetCreditBalance. Days the rollup has finished come from
// analytics_user_daily; the others (today, yesterday before its rollup, a past day that received
// late events and waits for a new rollup) are summed from the raw model_usage events with the
// same formula, so the figure is current and nothing counts twice. One statement: one snapshot,
// consistent even while a rollup commits.
import { sql } from "kysely";
import { rawEventsOfDay } from "../../analytics/rollup/plan.js";
import type { Executor } from "../../database.js";

/** First day of `now`'s UTC month and of the next one, YYYY-MM-DD. */
export function monthBounds(now: Date): { start: string; next: string } {
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const iso = (d: Date) => d.toISOString().slice(0, 10);
  return { start: iso(new Date(Date.UTC(y, m, 1))), next: iso(new Date(Date.UTC(y, m + 1, 1))) };
}

export async function creditsUsedThisMonth(db: Executor, orgId: string, userId: string, now: Date): Promise<number> {
  const { start, next } = monthBounds(now);
  const result = await sql<{ used: number | string | null }>`
    with rolled as (
      select d.day from analytics_daily d
      where d.org_id = ${orgId} and d.day >= ${start}::date and d.day < ${next}::date
        and not exists (select 1 from analytics_pending_days p where p.org_id = d.org_id and p.day = d.day)
    ),
    from_rollup as (
      select coalesce(sum(u.billable_tokens), 0) as credits from analytics_user_daily u
      where u.org_id = ${orgId} and u.user_id = ${userId} and u.day in (select day from rolled)
    ),
    -- The month's days not rolled up (today, and any day waiting for its rollup), each read as
    -- one key of the raw model_usage events' (org_id, UTC day, user_id) index (migration 0015):
    -- only the user's usage of those days, not the organization's day or month.
    unrolled as (
      select g.day::date as day from generate_series(${start}::date, ${next}::date - 1, interval '1 day') as g(day)
      where g.day::date not in (select day from rolled)
    ),
    from_events as (
      select coalesce(sum(day_credits.credits), 0) as credits
      from unrolled u
      cross join lateral (
        select sum((e.input_tokens + e.output_tokens + e.cache_write_tokens + e.cache_read_tokens * 0.1) * coalesce(m.multiplier, 1)) as credits
        from analytics_events e
        left join analytics_credit_multipliers m on m.model_id = e.model_id
        where ${rawEventsOfDay("e", orgId, sql.raw("u.day"))} and e.user_id = ${userId} and e.type = 'model_usage'
      ) day_credits
    )
    select from_rollup.credits + from_events.credits as used from from_rollup, from_events`.execute(db);
  return Number(result.rows[0]?.used ?? 0);
}
