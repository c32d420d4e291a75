// Frozen: never edit a migration once it has been merged; add a new one.
//
// A user's model usage on a UTC day, for the credit balance (organization/credit-limits-
// balance.ts): the days not rolled up yet (today, always) are summed from raw model_usage events.
// Through the (org_id, UTC day) index that read every event of the organization's day and kept
// one user's: about 100 ms for a 10,000-user organization's day (bench:analytics database). Keyed
// by (org_id, UTC day, user_id), partial on model_usage (about 30% of events), it reads only the
// user's rows; the day before the user keeps a batch's inserts within the day's keys.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create index analytics_events_model_usage_by_user on analytics_events
      (org_id, ((occurred_at at time zone 'UTC')::date), user_id) where type = 'model_usage'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index analytics_events_model_usage_by_user`.execute(db);
}
