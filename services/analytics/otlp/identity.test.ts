// What names OTLP items: series keys stay what earlier versions stored (their series' last
// values must still match after an upgrade); point IDs hash what the first version hashed, after
// the item's time; a log record's ID depends on its fields alone, not on how they were encoded;
// and IDs sort as their items' times do, for the claims' index.
import { createHash } from "node:crypto";
import { create, fromBinary, fromJsonString, toBinary, toJsonString } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type KeyValue, KeyValueSchema } from "../../../gen/opentelemetry/proto/common/v1/common_pb.js";
import { type LogRecord, LogRecordSchema } from "../../../gen/opentelemetry/proto/logs/v1/logs_pb.js";
import { ResourceSchema } from "../../../gen/opentelemetry/proto/resource/v1/resource_pb.js";
import { attributesOf, attributesOver, type Scalar } from "./attributes.js";
import { canonical, cumulativePointId, deltaPointId, logRecordIds, seriesKey } from "./identity.js";

/** How the first version named things: a hash object fed each part and a NUL; sorted entries as JSON. */
const earlierHash = (...parts: string[]) => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p).update("\0");
  return h.digest("hex").slice(0, 40);
};
const earlierCanonical = (attrs: Map<string, Scalar>) =>
  JSON.stringify([...attrs.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

const scalar = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.double(),
  fc.integer(),
  fc.boolean(),
);
const keyValueOf = ([key, value]: [string, Scalar]): KeyValue =>
  create(KeyValueSchema, {
    key,
    value: {
      value:
        typeof value === "string"
          ? { case: "stringValue", value }
          : typeof value === "number"
            ? { case: "doubleValue", value }
            : { case: "boolValue", value },
    },
  });

const entries = (keys: fc.Arbitrary<string>, maxLength: number) => fc.array(fc.tuple(keys, scalar), { maxLength });

/** An item's attributes over its resource's, and the one map of both the first version read. */
const attributeSets = fc
  .tuple(
    entries(fc.string({ unit: "binary", maxLength: 10 }), 8),
    entries(fc.oneof(fc.constantFrom("model", "type"), fc.string({ unit: "binary", maxLength: 10 })), 5),
  )
  .map(([resource, own]) => {
    const shared = attributesOf(resource.map(keyValueOf));
    return {
      attrs: attributesOver(shared, own.map(keyValueOf)),
      merged: new Map<string, Scalar>([...shared, ...own]),
    };
  });

describe("metric series and point IDs", () => {
  it("write the canonical text JSON.stringify wrote of the sorted entries, for any keys and values", () => {
    fc.assert(
      fc.property(attributeSets, ({ attrs, merged }) => canonical(attrs) === earlierCanonical(merged)),
      { numRuns: 5000 },
    );
  });

  it("are the series keys the first version stored, and point IDs of the item's time and the first version's hash", () => {
    fc.assert(
      fc.property(attributeSets, fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), ({ attrs, merged }, time) => {
        const key = seriesKey("claude_code.token.usage", attrs);
        expect(key).toBe(earlierHash("claude_code.token.usage", earlierCanonical(merged)));
        const micros = (time / 1000n).toString(16).padStart(14, "0");
        expect(deltaPointId("org_1", "claude_code.cost.usage", attrs, time - 1n, time)).toBe(
          `otlp:${micros}:${earlierHash("org_1", "claude_code.cost.usage", earlierCanonical(merged), String(time - 1n), String(time)).slice(0, 26)}`,
        );
        expect(cumulativePointId("org_1", key, 5n, time)).toBe(
          `otlp:${micros}:${earlierHash("org_1", key, "5", String(time)).slice(0, 26)}`,
        );
      }),
      { numRuns: 500 },
    );
  });
});

describe("log record IDs", () => {
  const record = (): LogRecord =>
    create(LogRecordSchema, {
      timeUnixNano: 1_764_000_000_123_456_789n,
      observedTimeUnixNano: 1_764_000_000_123_456_999n,
      severityNumber: 9,
      severityText: "INFO",
      eventName: "claude_code.api_request",
      body: { value: { case: "stringValue", value: "claude_code.api_request" } },
      attributes: [
        { key: "model", value: { value: { case: "stringValue", value: "claude-sonnet-4-5" } } },
        { key: "input_tokens", value: { value: { case: "intValue", value: 1200n } } },
        { key: "cost_usd", value: { value: { case: "doubleValue", value: 0.0123 } } },
        { key: "ok", value: { value: { case: "boolValue", value: true } } },
        { key: "raw", value: { value: { case: "bytesValue", value: new Uint8Array([1, 2, 3]) } } },
        {
          key: "nested",
          value: {
            value: {
              case: "kvlistValue",
              value: { values: [{ key: "a", value: { value: { case: "arrayValue", value: { values: [] } } } }] },
            },
          },
        },
      ],
      traceId: new Uint8Array(16).fill(7),
      spanId: new Uint8Array(8).fill(9),
    });
  const resource = create(ResourceSchema, {
    attributes: [{ key: "user.email", value: { value: { case: "stringValue", value: "a@b.c" } } }],
  });
  const idOf = (r: LogRecord) => logRecordIds("org_1", resource, "com.anthropic.claude_code.events")(r);

  it("are the same for a record decoded from protobuf or from JSON", () => {
    const r = record();
    const viaBinary = fromBinary(LogRecordSchema, toBinary(LogRecordSchema, r));
    const viaJson = fromJsonString(LogRecordSchema, toJsonString(LogRecordSchema, r));
    expect(idOf(viaBinary)).toBe(idOf(r));
    expect(idOf(viaJson)).toBe(idOf(r));
  });

  it("differ when any field differs, or the resource, scope or organization", () => {
    const base = idOf(record());
    const changes: ((r: LogRecord) => void)[] = [
      (r) => (r.timeUnixNano += 1n),
      (r) => (r.observedTimeUnixNano += 1n),
      (r) => (r.severityNumber = 10),
      (r) => (r.severityText = "WARN"),
      (r) => (r.eventName = "claude_code.user_prompt"),
      (r) => (r.body = undefined),
      (r) => r.attributes.pop(),
      (r) =>
        (r.attributes[1]!.value = {
          $typeName: "opentelemetry.proto.common.v1.AnyValue",
          value: { case: "stringValue", value: "1200" },
        }),
      (r) => (r.droppedAttributesCount = 1),
      (r) => (r.flags = 1),
      (r) => (r.traceId = new Uint8Array(16).fill(8)),
      (r) => (r.spanId = new Uint8Array(8)),
    ];
    const ids = new Set([base]);
    for (const change of changes) {
      const r = record();
      change(r);
      ids.add(idOf(r));
    }
    expect(ids.size).toBe(changes.length + 1);
    expect(logRecordIds("org_2", resource, "com.anthropic.claude_code.events")(record())).not.toBe(base);
    expect(logRecordIds("org_1", undefined, "com.anthropic.claude_code.events")(record())).not.toBe(base);
    expect(logRecordIds("org_1", resource, "other.scope")(record())).not.toBe(base);
  });

  it("sort as their times do (the observed time where the record has none), whatever they hash", () => {
    fc.assert(
      // From 1 ns: a time of 0 is no time, and the record's own observed time stands in for it
      // (what `unset` checks with times of its own).
      fc.property(
        fc.bigInt({ min: 1n, max: 2n ** 64n - 1n }),
        fc.bigInt({ min: 1n, max: 2n ** 64n - 1n }),
        fc.boolean(),
        (a, b, unset) => {
          const at = (time: bigint, severityText: string) => {
            const r = record();
            r.severityText = severityText;
            if (unset) [r.timeUnixNano, r.observedTimeUnixNano] = [0n, time];
            else r.timeUnixNano = time;
            return idOf(r);
          };
          const [ia, ib] = [at(a, "a"), at(b, "b")];
          expect(ia).toMatch(/^otlp:[0-9a-f]{14}:[0-9a-f]{26}$/);
          if (a / 1000n < b / 1000n) expect(ia < ib).toBe(true);
          if (a / 1000n > b / 1000n) expect(ia > ib).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("do not run two strings' texts together: a quote or separator inside one is quoted", () => {
    const a = record();
    a.severityText = 'x"|y';
    const b = record();
    b.severityText = "x";
    b.eventName = `y|${b.eventName}`;
    expect(idOf(a)).not.toBe(idOf(b));
  });
});
