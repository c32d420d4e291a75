// The group_by parameter of the endpoints that take one of several groupings (/code, /costs),
// and the rows a grouping makes of a day breakdown.
import type { JsonObject } from "@bufbuild/protobuf";
import { invalidArgument } from "../../platform/errors.js";
import { byKey } from "./rows.js";

/** null when omitted (""); one of `allowed`; anything else is a 400 naming the field and the choices. */
export function parseGroupBy<T extends string>(value: string, allowed: readonly T[]): T | null {
  if (value === "") return null;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  const choices = allowed.map((a) => `"${a}"`).join(", ");
  throw invalidArgument("group_by", `must be one of ${choices} or omitted, got "${value.slice(0, 40)}"`);
}

/**
 * One {date, group_key, ...metrics} row per entry of each day's breakdown: days in their order
 * (by date), a day's entries by key.
 */
export function groupedRows<D extends { day: string }, E>(
  days: readonly D[],
  entriesOf: (day: D) => readonly E[],
  keyOf: (entry: E) => string,
  metricsOf: (entry: E) => JsonObject,
): JsonObject[] {
  return days.flatMap((d) =>
    [...entriesOf(d)]
      .sort((a, b) => byKey(keyOf(a), keyOf(b)))
      .map((e) => ({ date: d.day, group_key: keyOf(e), ...metricsOf(e) })),
  );
}
