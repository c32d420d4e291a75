// OTLP attributes (KeyValue lists of AnyValue) as the flat scalar map the mapping reads: strings,
// numbers and booleans kept, arrays, key-value lists and bytes dropped (no attribute the mapping
// reads has one of those types), resource attributes first and the data point's or log record's
// over them.
import type { AnyValue, KeyValue } from "../../../gen/opentelemetry/proto/common/v1/common_pb.js";

export type Scalar = string | number | boolean;

/**
 * What the mapping reads of an item's attributes: values by key, and for a series' canonical text
 * (identity.ts) the two layers they come from: the resource's, one map shared by all its items,
 * and the item's own over them.
 */
export interface Attributes {
  get(key: string): Scalar | undefined;
  readonly shared: ReadonlyMap<string, Scalar>;
  /** The item's own scalar attributes, each key once (its last scalar value), in no order. */
  ownEntries(): [string, Scalar][];
}

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
 * A data point's or log record's own attributes over its resource's (read once for all its items):
 * what attributesOf(resource, own) would hold, read in place rather than copied into a map of
 * its own for every item.
 */
export function attributesOver(base: ReadonlyMap<string, Scalar>, own: readonly KeyValue[]): Attributes {
  return new AttributesOver(base, own);
}

class AttributesOver implements Attributes {
  constructor(
    readonly shared: ReadonlyMap<string, Scalar>,
    private readonly own: readonly KeyValue[],
  ) {}

  /** The last scalar value `own` has for the key (what a map filled in order would keep), else the base's. */
  get(key: string): Scalar | undefined {
    const own = this.own;
    for (let i = own.length - 1; i >= 0; i--) {
      const kv = own[i]!;
      if (kv.key !== key) continue;
      const value = scalarOf(kv.value);
      if (value !== undefined) return value;
    }
    return this.shared.get(key);
  }

  ownEntries(): [string, Scalar][] {
    if (this.own.length === 0) return [];
    // A map filled in order: the last scalar value of a key wins, in time linear in the list
    // (a point may carry a hundred thousand attributes).
    const values = new Map<string, Scalar>();
    for (const kv of this.own) {
      const value = scalarOf(kv.value);
      if (value !== undefined) values.set(kv.key, value);
    }
    return [...values];
  }
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
