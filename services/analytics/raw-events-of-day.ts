// The predicate that picks an organization's UTC day of raw events, for every reader of a day
// (the rollup, the credit balance). The day's expression is the one of the (org_id, UTC day)
// index (migration 0012), written once here so that no reader drifts off it and scans instead.
// The range on occurred_at says the same; it is there for the partitions, which are ranges of
// occurred_at: the executor skips every month but the day's.
import { sql, type RawBuilder } from "kysely";

/**
 * `alias`'s rows of the organization on `day` (a SQL date expression, such as a column of the
 * row source the events are joined to).
 */
export function rawEventsOfDay(alias: string, orgId: string, day: RawBuilder<unknown>): RawBuilder<unknown> {
  const e = sql.raw(alias);
  return sql`${e}.org_id = ${orgId} and (${e}.occurred_at at time zone 'UTC')::date = ${day}
    and ${e}.occurred_at >= (${day}::timestamp at time zone 'UTC') and ${e}.occurred_at < ((${day} + 1)::timestamp at time zone 'UTC')`;
}
