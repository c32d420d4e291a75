// OTLP attributes (KeyValue lists of AnyValue) as the flat scalar map the mapping reads: strings,
// numbers and booleans kept, arrays, key-value lists and bytes dropped (no attribute the mapping
// reads has one of those types), resource attributes first and the data point's or log record's
// over them.
import type { AnyValue, KeyValue } from "../../../gen/opentelemetry/proto/common/v1/common_pb.js";

export type Scalar = string | number | boolean;
export type Attributes = ReadonlyMap<string, Scalar>;

/** Longest attribute value kept; a longer one is cut (events.ts bounds what is stored anyway). */
const MAX_VALUE_CHARS = 4096;

function scalarOf(value: AnyValue | undefined): Scalar | undefined {
  const v = value?.value;
  switch (v?.case) {
    case "stringValue":
      return v.value.length > MAX_VALUE_CHARS ? v.value.slice(0, MAX_VALUE_CHARS) : v.value;
    case "intValue":
      return Number(v.value);
    case "doubleValue":
      return v.value;
    case "boolValue":
      return v.value;
    default:
      return undefined;
  }
}

export function attributesOf(...lists: readonly (readonly KeyValue[])[]): Map<string, Scalar> {
  const map = new Map<string, Scalar>();
  for (const list of lists)
    for (const kv of list) {
      const value = scalarOf(kv.value);
      if (value !== undefined) map.set(kv.key, value);
    }
  return map;
}

/**
 * `own` over attributes already read (a resource's, read once for all its items): the same map
 * as attributesOf(resource, own).
 */
export function attributesOver(base: Attributes, own: readonly KeyValue[]): Map<string, Scalar> {
  const map = new Map(base);
  for (const kv of own) {
    const value = scalarOf(kv.value);
    if (value !== undefined) map.set(kv.key, value);
  }
  return map;
}

/** A non-empty string attribute (numbers and booleans as their text), else undefined. */
export function text(attrs: Attributes, key: string): string | undefined {
  const v = attrs.get(key);
  if (v === undefined) return undefined;
  const s = typeof v === "string" ? v : String(v);
  return s === "" ? undefined : s;
}

/**
 * A numeric attribute: a number, or a string holding one (Claude Code's event attributes carry
 * counts as strings); undefined when absent or not a finite number.
 */
export function numeric(attrs: Attributes, key: string): number | undefined {
  const v = attrs.get(key);
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined;
  if (typeof v === "string" && v.trim() !== "") {
    const n = Number(v);
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}
