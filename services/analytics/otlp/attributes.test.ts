// An item's attributes read in place over its resource's are what one map of both, filled in
// order, would hold: the same values by key (the last scalar wins, non-scalars never hide a
// value) and, in its two layers, the same entries.
import { create } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type AnyValue,
  AnyValueSchema,
  type KeyValue,
  KeyValueSchema,
} from "../../../gen/opentelemetry/proto/common/v1/common_pb.js";
import { attributesOf, attributesOver } from "./attributes.js";

const KEYS = ["model", "type", "user.email", "session.id", "x"];

const anyValue: fc.Arbitrary<AnyValue["value"]> = fc.oneof(
  fc.string({ maxLength: 6 }).map((value) => ({ case: "stringValue" as const, value })),
  fc.bigInt({ min: -5n, max: 5n }).map((value) => ({ case: "intValue" as const, value })),
  fc.double({ noNaN: true }).map((value) => ({ case: "doubleValue" as const, value })),
  fc.boolean().map((value) => ({ case: "boolValue" as const, value })),
  fc.constant({ case: "bytesValue" as const, value: new Uint8Array([1]) }),
  fc.constant({
    case: "arrayValue" as const,
    value: { $typeName: "opentelemetry.proto.common.v1.ArrayValue", values: [] },
  }),
  fc.constant({ case: undefined }),
) as fc.Arbitrary<AnyValue["value"]>;

const keyValues: fc.Arbitrary<KeyValue[]> = fc.array(
  fc
    .tuple(fc.constantFrom(...KEYS), anyValue)
    .map(([key, value]) => create(KeyValueSchema, { key, value: create(AnyValueSchema, { value }) })),
  { maxLength: 8 },
);

describe("attributesOver", () => {
  it("reads as attributesOf(resource, own) would", () => {
    fc.assert(
      fc.property(keyValues, keyValues, (resource, own) => {
        const merged = attributesOf(resource, own);
        const over = attributesOver(attributesOf(resource), own);
        for (const key of KEYS) expect(over.get(key)).toEqual(merged.get(key));
        // Its two layers, the item's own over the resource's, are the merged map.
        const ownEntries = over.ownEntries();
        expect(new Set(ownEntries.map(([key]) => key)).size).toBe(ownEntries.length);
        expect(new Map([...over.shared, ...ownEntries])).toEqual(merged);
      }),
      { numRuns: 3000 },
    );
  });

  it("gives an item's own entries in time linear in their number (a point may carry 10^5 attributes)", () => {
    const own = Array.from({ length: 100_000 }, (_, i) =>
      create(KeyValueSchema, { key: `k${i}`, value: { value: { case: "intValue", value: BigInt(i) } } }),
    );
    const entries = attributesOver(new Map(), own).ownEntries();
    expect(entries).toHaveLength(100_000);
    expect(entries[99_999]).toEqual(["k99999", 99_999]);
  });

  it("cuts long string values as attributesOf does", () => {
    const long = "a".repeat(5000);
    const own = [create(KeyValueSchema, { key: "x", value: { value: { case: "stringValue", value: long } } })];
    expect(attributesOver(new Map(), own).get("x")).toBe(attributesOf(own).get("x"));
    expect((attributesOver(new Map(), own).get("x") as string).length).toBe(4096);
  });
});
