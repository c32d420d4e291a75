// What every panel's load gets: the API client, the chosen range and the signal that cancels
// the load when the range changes or the key is forgotten.
import type { ApiClient } from "./api.js";
import type { DayRange } from "./dates.js";

export interface LoadContext {
  api: ApiClient;
  range: DayRange;
  /** Every day of the range, in order. */
  days: string[];
  /** The first day of the range whose figures may still change (the lag), if the range has one. */
  provisionalFrom?: string;
  signal: AbortSignal;
}

export const ANALYTICS = "/api/v1/analytics";

export function rangeQuery(ctx: LoadContext): { startDate: string; endDate: string } {
  return { startDate: ctx.range.start, endDate: ctx.range.end };
}
