// UTC calendar days as YYYY-MM-DD strings, and the date rules of the analytics endpoints
// (docs/metrics.md, "Rules every endpoint shares"): from 2026-01-14 through yesterday, start <=
// end, at most 366 days.
import { invalidArgument } from "../platform/errors.js";

/** The first day analytics cover. */
export const EARLIEST_DATE = "2026-01-14";
export const MAX_RANGE_DAYS = 366;
const DAY_MS = 86_400_000;
const DAY_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The UTC day of an instant. */
export function dayOf(instant: Date | number): string {
  return new Date(instant).toISOString().slice(0, 10);
}

const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n));

/** The last day isoOfMs formatted, and its text: the instants of one export fall on a few days. */
let cachedDay = Number.NaN;
let cachedDayText = "";

const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

/**
 * An instant (Unix ms) as Date.prototype.toISOString writes it (2026-03-01T12:00:00.000Z), for
 * instants from 1970 through 9999: the day's part from the Date once per day, the time of day by
 * arithmetic, about a fifth of toISOString's time on the OTLP receiver's path of one per record.
 */
export function isoOfMs(ms: number): string {
  const day = Math.floor(ms / DAY_MS);
  if (!(ms >= 0 && ms < 253_402_300_800_000)) return new Date(ms).toISOString();
  if (day !== cachedDay) {
    cachedDay = day;
    cachedDayText = new Date(day * DAY_MS).toISOString().slice(0, 11);
  }
  let rest = ms - day * DAY_MS;
  const milli = rest % 1000;
  rest = (rest - milli) / 1000;
  const sec = rest % 60;
  rest = (rest - sec) / 60;
  const min = rest % 60;
  const hour = (rest - min) / 60;
  return `${cachedDayText}${pad2(hour)}:${pad2(min)}:${pad2(sec)}.${pad3(milli)}Z`;
}

export function addDays(day: string, n: number): string {
  return dayOf(Date.parse(`${day}T00:00:00Z`) + n * DAY_MS);
}

/** Midnight UTC starting the day. */
export function startOfDay(day: string): Date {
  return new Date(`${day}T00:00:00Z`);
}

/** end - start in days (both YYYY-MM-DD). */
export function daysBetween(start: string, end: string): number {
  return Math.round((Date.parse(`${end}T00:00:00Z`) - Date.parse(`${start}T00:00:00Z`)) / DAY_MS);
}

/**
 * Every day from start through end. Per request on the analytics read path, so the days are
 * stepped on one Date and formatted by hand (toISOString per day was a tenth of a /tokens request).
 */
export function eachDay(start: string, end: string): string[] {
  const out: string[] = [];
  const date = new Date(`${start}T00:00:00Z`);
  for (let d = start; d <= end; ) {
    out.push(d);
    date.setUTCDate(date.getUTCDate() + 1);
    const y = date.getUTCFullYear();
    d = `${y < 1000 ? String(y).padStart(4, "0") : y}-${pad2(date.getUTCMonth() + 1)}-${pad2(date.getUTCDate())}`;
  }
  return out;
}

/** True for a real calendar day written YYYY-MM-DD. */
export function isDay(text: string): boolean {
  const m = DAY_RE.exec(text);
  if (!m) return false;
  const date = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return dayOf(date) === text;
}

export interface DayRange {
  readonly start: string;
  readonly end: string;
}

/**
 * Checks an endpoint's startDate/endDate against the rules; throws a 400 naming the field.
 * `today` is the current UTC day (injectable for tests).
 */
export function parseDayRange(startDate: string, endDate: string, today: string): DayRange {
  const check = (value: string, field: string) => {
    if (value === "") throw invalidArgument(field, "is required (YYYY-MM-DD)");
    if (!isDay(value)) throw invalidArgument(field, `must be a date written YYYY-MM-DD, got "${value.slice(0, 40)}"`);
    if (value < EARLIEST_DATE)
      throw invalidArgument(field, `must not be before ${EARLIEST_DATE}, the first day analytics cover`);
  };
  check(startDate, "startDate");
  check(endDate, "endDate");
  const yesterday = addDays(today, -1);
  if (startDate > today)
    throw invalidArgument("startDate", `is in the future; analytics cover days through ${yesterday}`);
  if (endDate > today) {
    throw invalidArgument(
      "endDate",
      `is in the future; analytics data lags by 24 hours, so the latest day available is ${yesterday}`,
    );
  }
  if (endDate === today) {
    throw invalidArgument(
      "endDate",
      `is today; analytics data lags by 24 hours, so the latest day available is ${yesterday}`,
    );
  }
  // Today as the start, with an earlier end: the lag explains more than the order does.
  if (startDate === today) {
    throw invalidArgument(
      "startDate",
      `is today; analytics data lags by 24 hours, so the latest day available is ${yesterday}`,
    );
  }
  if (startDate > endDate) throw invalidArgument("startDate", `must not be after endDate (${startDate} > ${endDate})`);
  if (daysBetween(startDate, endDate) + 1 > MAX_RANGE_DAYS) {
    throw invalidArgument(
      "endDate",
      `the range may span at most ${MAX_RANGE_DAYS} days, got ${daysBetween(startDate, endDate) + 1}`,
    );
  }
  return { start: startDate, end: endDate };
}
