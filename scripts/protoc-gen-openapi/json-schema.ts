// The JSON Schema (2020-12, OpenAPI 3.1's dialect) objects the generator writes: plain JSON.
export type JsonSchema = { [keyword: string]: unknown };

/** `base` with `extra`'s keywords on top; `items` and `properties` merge one level deeper. */
export function mergeSchema(base: JsonSchema, extra: JsonSchema): JsonSchema {
  const merged: JsonSchema = { ...base };
  for (const [keyword, value] of Object.entries(extra)) {
    const current = merged[keyword];
    merged[keyword] =
      (keyword === "items" || keyword === "properties") && isObject(current) && isObject(value)
        ? mergeSchema(current, value)
        : value;
  }
  return merged;
}

function isObject(value: unknown): value is JsonSchema {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
