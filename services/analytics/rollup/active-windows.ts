// Weekly and monthly active users (distinct users active on D-6…D and D-29…D), exact, for a
// range of days, in one pass over the per-user day rows instead of one distinct count per day:
// each active day `a` of a user covers the days [a, min(a + w - 1, next active day - 1)], so a
// user's covering segments never overlap and "distinct users active in the window ending on D"
// equals the number of segments containing D, a running sum of +1/-1 deltas.
//
// Rows of days that already have a day row are updated; a quiet day (no events) whose monthly
// count is positive gets a zero row carrying the two counts, so charts of the range have them.
import { sql } from "kysely";
import type { Executor } from "../../database.js";
import { addDays } from "../dates.js";

export async function refreshActiveWindows(db: Executor, orgId: string, from: string, to: string): Promise<void> {
  if (from > to) return;
  const lo = addDays(from, -29);
  await sql`
    with active as (
      select day, lead(day) over (partition by user_id order by day) as next_day
      from analytics_user_daily
      where org_id = ${orgId} and day between ${lo}::date and ${to}::date
    ), deltas as (
      select day as d, 1 as m, 1 as w from active
      union all select least(day + 30, coalesce(next_day, day + 30)), -1, 0 from active
      union all select least(day + 7, coalesce(next_day, day + 7)), 0, -1 from active
    ), per_day as (
      select d, sum(m) as m, sum(w) as w from deltas group by d
    ), counts as (
      select s.day, sum(coalesce(p.m, 0)) over (order by s.day) as mau, sum(coalesce(p.w, 0)) over (order by s.day) as wau
      from (select g::date as day from generate_series(${lo}::date, ${to}::date, interval '1 day') g) s
      left join per_day p on p.d = s.day
    ), wanted as (
      select day, wau, mau from counts where day >= ${from}::date
    ), updated as (
      update analytics_daily d set weekly_active_users = w.wau, monthly_active_users = w.mau
      from wanted w
      where d.org_id = ${orgId} and d.day = w.day
        and (d.weekly_active_users <> w.wau or d.monthly_active_users <> w.mau)
      returning d.day
    )
    -- A quiet day has no /users rows: the digest of none (see days.ts users_md5).
    insert into analytics_daily (org_id, day, weekly_active_users, monthly_active_users, users_md5)
    select ${orgId}, w.day, w.wau, w.mau, md5('') from wanted w
    where w.mau > 0 and not exists (select 1 from analytics_daily d where d.org_id = ${orgId} and d.day = w.day)`.execute(
    db,
  );
}
