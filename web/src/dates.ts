// UTC calendar days (YYYY-MM-DD) and the analytics API's date rules (interface docs/interface.md §8): days
// from 2026-01-14 through yesterday (UTC), at most 366 days in a range. Data lags by 24 hours: a
// day is rolled up shortly after it ends, so today is never available and yesterday's figures
// may still change while late events arrive.
export const EARLIEST_DAY = "2026-01-14";
export const MAX_RANGE_DAYS = 366;
const DAY_MS = 86_400_000;

export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function addDays(day: string, n: number): string {
  return dayOf(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS);
}

/** Days from start through end, both included. */
export function eachDay(start: string, end: string): string[] {
  const days: string[] = [];
  for (let d = start; d <= end; d = addDays(d, 1)) days.push(d);
  return days;
}

/** Seconds since the epoch at the day's UTC midnight: uPlot's x values. */
export function daySeconds(day: string): number {
  return Date.parse(`${day}T00:00:00Z`) / 1000;
}

export function today(now = Date.now()): string {
  return dayOf(now);
}

/** The latest day the API serves. */
export function latestDay(now = Date.now()): string {
  return addDays(today(now), -1);
}

export interface DayRange {
  start: string;
  end: string;
}

/** The last `days` days ending yesterday, never before the earliest day. */
export function lastDays(days: number, now = Date.now()): DayRange {
  const end = latestDay(now);
  const start = addDays(end, -(days - 1));
  return { start: start < EARLIEST_DAY ? EARLIEST_DAY : start, end };
}

const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;

/** What is wrong with a range by the API's rules, naming the field, or undefined when it is fine. */
export function rangeProblem(range: DayRange, now = Date.now()): { field: "start" | "end"; text: string } | undefined {
  const latest = latestDay(now);
  for (const field of ["start", "end"] as const) {
    const day = range[field];
    if (!DAY_RE.test(day) || dayOf(Date.parse(`${day}T00:00:00Z`)) !== day)
      return { field, text: "Enter a date as YYYY-MM-DD." };
    if (day < EARLIEST_DAY) return { field, text: `Analytics begin on ${EARLIEST_DAY}.` };
    if (day > latest) return { field, text: `Data lags by 24 hours: the latest day available is ${latest} (UTC).` };
  }
  if (range.start > range.end) return { field: "start", text: "The start must not be after the end." };
  const span = eachDay(range.start, range.end).length;
  if (span > MAX_RANGE_DAYS)
    return { field: "end", text: `A range spans at most ${MAX_RANGE_DAYS} days (this is ${span}).` };
  return undefined;
}

/** True when the range includes yesterday, whose figures may still change. */
export function includesProvisionalDay(range: DayRange, now = Date.now()): boolean {
  return range.end >= latestDay(now);
}
