// /costs (docs/analytics.md): cost in US dollars per day, from the day rows the rollup stored
// (analytics_daily, migration 0020): the clients' reported cost where they sent one, else the
// tokens at the model's price (analytics_model_prices); tokens with neither are listed as
// unpriced_tokens and cost 0. Without group_by one row per day of the range; with group_by=model
// or user the breakdown flattened into {date, group_key, ...metrics} rows ordered by date then
// group_key. Keys are the json_names of CostsRow and CostsGroupRow in analytics.proto.
import type { JsonObject } from "@bufbuild/protobuf";
import { eachDay, type DayRange } from "../dates.js";
import type { DailyRow } from "../tables.js";
import { groupedRows, parseGroupBy } from "./group-by.js";

export const COSTS_COLUMNS = [
  "day",
  "cost_usd",
  "reported_cost_usd",
  "unpriced_tokens",
  "costs_by_model",
  "costs_by_user",
] as const;
export type CostsDay = Pick<DailyRow, (typeof COSTS_COLUMNS)[number]>;

export const COSTS_GROUPS = ["model", "user"] as const;
export type CostsGrouping = (typeof COSTS_GROUPS)[number];

/** The request's group_by: null when omitted; a 400 naming the field for anything else. */
export const costsGroupBy = (value: string): CostsGrouping | null => parseGroupBy(value, COSTS_GROUPS);

type CostMetrics = { cost_usd: number; reported_cost_usd: number; unpriced_tokens: number };

const metrics = (c: CostMetrics) => ({
  cost_usd: c.cost_usd,
  reported_cost_usd: c.reported_cost_usd,
  unpriced_tokens: c.unpriced_tokens,
});

export function costsRows(range: DayRange, days: readonly CostsDay[], grouping: CostsGrouping | null): JsonObject[] {
  if (grouping === "model")
    return groupedRows(
      days,
      (d) => d.costs_by_model,
      (m) => m.model_id,
      metrics,
    );
  if (grouping === "user")
    return groupedRows(
      days,
      (d) => d.costs_by_user,
      (u) => u.user_id,
      metrics,
    );
  const byDay = new Map(days.map((d) => [d.day, d]));
  return eachDay(range.start, range.end).map((date) => {
    const d = byDay.get(date);
    return {
      date,
      ...metrics(d ?? { cost_usd: 0, reported_cost_usd: 0, unpriced_tokens: 0 }),
      by_model: (d?.costs_by_model ?? []) as JsonObject[],
      by_user: (d?.costs_by_user ?? []) as JsonObject[],
    };
  });
}
