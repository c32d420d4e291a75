// Postgres array literals ('{a,"b c",NULL}') for the bulk ingest statement, written directly:
// node-pg would quote and escape every element of every array with regular expressions, which
// cost more than the server's whole work on the batch. Elements made only of characters that
// never need quoting travel bare; anything else is quoted and escaped as array_in expects.

/** Characters an unquoted array element may consist of (no space, comma, brace, quote or backslash). */
const BARE = /^[\w.:@+\-/]+$/;

function element(value: string): string {
  // An unquoted NULL (any letter case) is the null element; "" must be quoted to be a string.
  if (BARE.test(value) && value.toUpperCase() !== "NULL") return value;
  return `"${value.replace(/["\\]/g, "\\$&")}"`;
}

/** A text[] literal; null elements become NULL. */
export function textArray(values: ReadonlyArray<string | null>): string {
  let out = "{";
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ",";
    const v = values[i]!;
    out += v === null ? "NULL" : element(v);
  }
  return `${out}}`;
}

/** A bigint[] literal of integers (already validated); null elements become NULL. */
export function integerArray(values: ReadonlyArray<number | null>): string {
  let out = "{";
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ",";
    const v = values[i]!;
    out += v === null ? "NULL" : String(v);
  }
  return `${out}}`;
}

/**
 * A float8[] literal of finite numbers (already validated); null elements become NULL. String()
 * prints the shortest digits that read back as the same double, which float8's input does.
 */
export const doubleArray: (values: ReadonlyArray<number | null>) => string = integerArray;
