// Day-by-day series from API rows: every day of the range gets a value (0 where the API has no
// row for it), so each chart's x axis is the whole range.
import type { ChartData } from "./debug.js";

/** One series per group (largest total first), from grouped rows {date, group_key, …}. */
export function seriesByGroup<Row extends { date: string; group_key: string }>(
  days: string[],
  rows: Row[],
  pick: (row: Row) => number,
): ChartData {
  const index = new Map(days.map((d, i) => [d, i]));
  const groups = new Map<string, number[]>();
  for (const row of rows) {
    const i = index.get(row.date);
    if (i === undefined) continue;
    let values = groups.get(row.group_key);
    if (!values) groups.set(row.group_key, (values = days.map(() => 0)));
    values[i] = (values[i] ?? 0) + pick(row);
  }
  const total = (values: number[]) => values.reduce((a, b) => a + b, 0);
  const series = [...groups]
    .map(([label, values]) => ({ label, values }))
    .sort((a, b) => total(b.values) - total(a.values) || a.label.localeCompare(b.label));
  return { days, series };
}

/** Named series from day rows {date, …}: one per field. */
export function seriesOfFields<Row extends { date: string }>(
  days: string[],
  rows: Row[],
  fields: { label: string; pick: (row: Row) => number }[],
): ChartData {
  const byDay = new Map(rows.map((r) => [r.date, r]));
  return {
    days,
    series: fields.map(({ label, pick }) => ({
      label,
      values: days.map((d) => {
        const row = byDay.get(d);
        return row ? pick(row) : 0;
      }),
    })),
  };
}

export function hasAnyValue(data: ChartData): boolean {
  return data.series.some((s) => s.values.some((v) => v !== 0));
}

export function seriesTotal(data: ChartData): number {
  return data.series.reduce((sum, s) => sum + s.values.reduce((a, b) => a + b, 0), 0);
}
