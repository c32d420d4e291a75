// The group_by parameter of the endpoints that take one of several groupings (/code, /costs).
import { invalidArgument } from "../../platform/errors.js";

/** null when omitted (""); one of `allowed`; anything else is a 400 naming the field and the choices. */
export function parseGroupBy<T extends string>(value: string, allowed: readonly T[]): T | null {
  if (value === "") return null;
  if ((allowed as readonly string[]).includes(value)) return value as T;
  const choices = allowed.map((a) => `"${a}"`).join(", ");
  throw invalidArgument("group_by", `must be one of ${choices} or omitted, got "${value.slice(0, 40)}"`);
}
