// Request messages generated from the protobuf descriptors (gen/, @bufbuild/protobuf
// reflection): per field a valid value, a hostile one or none, recursively, in protobuf JSON
// form; then the damage only one encoding can carry: wrong JSON types and malformed JSON for
// Connect, and for the binary form unknown fields, wrong wire types, truncated varints, invalid
// UTF-8 in string fields, negative and overrunning lengths, and nesting past every limit.
import fc from "fast-check";
import { ScalarType, fromJson, toBinary, type DescField, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { hostileJson, INVALID_UTF8_BODIES, MALFORMED_JSON } from "./fuzz-values.js";
import { coerce, hostileScalar, plainScalar, poolFor } from "./rpc-values.js";

export type Choice = "valid" | "hostile" | "absent";

export interface GeneratedMessage {
  /** Protobuf JSON form; always accepted by fromJson (so it has a binary form). */
  json: Record<string, unknown>;
  /** What was chosen for each top-level field, "field:kind". */
  labels: string[];
}

const WKT_STRUCT = "google.protobuf.Struct";
const WKT_VALUE = "google.protobuf.Value";
const WKT_LIST = "google.protobuf.ListValue";
const isWkt = (m: DescMessage) => [WKT_STRUCT, WKT_VALUE, WKT_LIST].includes(m.typeName);
const MAX_DEPTH = 4;

/**
 * JSON nested `depth` levels deep. The binary form is made by fromJson, which stops at 100 levels
 * of messages (each JSON level is a Value and a Struct or ListValue), so generated values stay
 * below; deeper nesting is damage done to the encoded forms.
 */
export function nestedJson(depth: number, kind: "object" | "array"): JsonValue {
  let v: JsonValue = 1;
  for (let i = 0; i < depth; i++) v = kind === "object" ? { a: v } : [v];
  return v;
}

const hugeObject = (n: number): JsonValue => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
const ODD_KEYS: JsonValue = { "": 1, "\u0000": 2, "\ud800": 3, "a.b": 4, __proto__: 5, constructor: 6, "😀": 7 };

/** Values of Struct, Value and ListValue fields (JSON objects, any JSON, arrays). */
function wktValue(m: DescMessage, choice: "valid" | "hostile"): fc.Arbitrary<unknown> {
  const object =
    choice === "valid"
      ? fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 })
      : fc.oneof(
          fc.constantFrom(10, 30).map((d) => nestedJson(d, "object")),
          fc.constantFrom(1_000, 20_000).map(hugeObject),
          fc.constant(ODD_KEYS),
          fc.dictionary(fc.string({ maxLength: 8 }), hostileJsonValue, { maxKeys: 4 }),
        );
  if (m.typeName === WKT_STRUCT) return object;
  const array =
    choice === "valid"
      ? fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 })
      : fc.oneof(
          fc.constantFrom(10, 30).map((d) => nestedJson(d, "array")),
          fc.constantFrom(1_000, 20_000).map((n) => Array.from({ length: n }, (_, i) => i)),
        );
  if (m.typeName === WKT_LIST) return array;
  return choice === "valid" ? fc.jsonValue({ maxDepth: 2 }) : fc.oneof(object, array, hostileJsonValue);
}

function depthOf(v: unknown): number {
  let depth = 0;
  let level: unknown[] = [v];
  while (level.length > 0 && depth <= 100) {
    level = level.flatMap((x) => (x !== null && typeof x === "object" ? Object.values(x) : []));
    if (level.length > 0) depth++;
  }
  return depth;
}

/**
 * hostileJson as a Value can hold it: no NaN or infinities (they print as null), and nested at
 * most 30 deep so the message keeps a binary form (deeper nesting is encoding damage).
 */
const hostileJsonValue: fc.Arbitrary<JsonValue> = hostileJson.filter(
  (v) => !(typeof v === "number" && !Number.isFinite(v)) && depthOf(v) <= 30,
) as fc.Arbitrary<JsonValue>;

function enumValue(field: DescField, choice: "valid" | "hostile"): fc.Arbitrary<unknown> {
  const e =
    field.fieldKind === "enum"
      ? field.enum
      : field.fieldKind === "list" && field.listKind === "enum"
        ? field.enum
        : undefined;
  const names = e ? e.values.map((v) => v.name) : ["0"];
  return choice === "valid" ? fc.constantFrom(...names) : fc.constantFrom(99, -1, 2147483647);
}

export class MessageGenerator {
  private readonly memo = new Map<string, fc.Arbitrary<GeneratedMessage>>();

  constructor(private readonly pools: Record<string, fc.Arbitrary<unknown>>) {}

  /** Messages of this type, each field valid, hostile or absent. */
  message(desc: DescMessage, depth = 0): fc.Arbitrary<GeneratedMessage> {
    const key = `${desc.typeName}@${depth}`;
    const known = this.memo.get(key);
    if (known) return known;
    const fields = desc.fields.map((f) => this.field(desc, f, depth));
    const arbitrary = fc.tuple(...fields).map((values) => {
      const json: Record<string, unknown> = {};
      const labels: string[] = [];
      desc.fields.forEach((f, i) => {
        const [choice, value] = values[i]!;
        labels.push(`${f.localName}:${choice}`);
        if (choice !== "absent" && value !== undefined) json[f.jsonName] = value;
      });
      // A oneof holds one member: the first generated one stays (the OTLP messages have oneofs).
      for (const o of desc.oneofs) {
        let kept = false;
        for (const f of o.fields) {
          if (!(f.jsonName in json)) continue;
          if (kept) delete json[f.jsonName];
          kept = true;
        }
      }
      return { json, labels };
    });
    this.memo.set(key, arbitrary);
    return arbitrary;
  }

  private field(desc: DescMessage, f: DescField, depth: number): fc.Arbitrary<[Choice, unknown]> {
    // google.protobuf.Any (google.api.HttpBody's extensions) needs a resolvable @type: left out.
    if ((f.fieldKind === "message" || f.fieldKind === "list") && f.message?.typeName === "google.protobuf.Any")
      return fc.constant(["absent", undefined] as [Choice, unknown]);
    const valid = this.fieldValue(desc, f, depth, "valid");
    const hostile = this.fieldValue(desc, f, depth, "hostile");
    const options: fc.WeightedArbitrary<[Choice, unknown]>[] = [
      { weight: 6, arbitrary: valid.map((v) => ["valid", v] as [Choice, unknown]) },
      { weight: 2, arbitrary: fc.constant(["absent", undefined] as [Choice, unknown]) },
    ];
    if (hostile) options.push({ weight: 2, arbitrary: hostile.map((v) => ["hostile", v] as [Choice, unknown]) });
    return fc.oneof(...options);
  }

  /** One value of a field (a whole list or map for those); undefined when it has no hostile form. */
  private fieldValue(desc: DescMessage, f: DescField, depth: number, choice: "valid"): fc.Arbitrary<unknown>;
  private fieldValue(
    desc: DescMessage,
    f: DescField,
    depth: number,
    choice: "hostile",
  ): fc.Arbitrary<unknown> | undefined;
  private fieldValue(
    desc: DescMessage,
    f: DescField,
    depth: number,
    choice: "valid" | "hostile",
  ): fc.Arbitrary<unknown> | undefined {
    const pool = poolFor(this.pools, desc, f);
    switch (f.fieldKind) {
      case "scalar":
        return choice === "valid"
          ? (pool ?? plainScalar(f.scalar)).map((v) => coerce(f.scalar, v))
          : hostileScalar(f.scalar);
      case "enum":
        return enumValue(f, choice);
      case "message":
        if (isWkt(f.message)) return pool && choice === "valid" ? pool : wktValue(f.message, choice);
        // A nested message is hostile through its own fields.
        if (choice === "hostile") return undefined;
        if (depth >= MAX_DEPTH) return fc.constant({});
        return this.message(f.message, depth + 1).map((m) => m.json);
      case "list": {
        if (choice === "valid" && pool) return pool;
        const item: fc.Arbitrary<unknown> =
          f.listKind === "scalar"
            ? choice === "valid"
              ? plainScalar(f.scalar).map((v) => coerce(f.scalar, v))
              : hostileScalar(f.scalar)
            : f.listKind === "enum"
              ? enumValue(f, choice)
              : isWkt(f.message)
                ? wktValue(f.message, choice)
                : depth >= MAX_DEPTH
                  ? fc.constant({})
                  : this.message(f.message, depth + 1).map((m) => m.json);
        if (choice === "valid") return fc.array(item, { maxLength: 3 });
        // 1 000 or 20 000 items: the simplest item (an empty message, a default scalar) so the
        // size is the point, or a few hostile ones.
        const simplest =
          f.listKind === "message"
            ? {}
            : f.listKind === "enum"
              ? 0
              : coerce(f.scalar, f.scalar === ScalarType.STRING ? "x" : f.scalar === ScalarType.BOOL ? false : 0);
        return fc.oneof(
          { weight: 2, arbitrary: fc.array(item, { minLength: 1, maxLength: 4 }) },
          {
            weight: 1,
            arbitrary: fc.constantFrom(1_000, 20_000).map((n) => Array.from({ length: n }, () => simplest)),
          },
        );
      }
      case "map": {
        const keyPool = poolFor(this.pools, desc, f, "#key");
        const key: fc.Arbitrary<string> =
          choice === "valid"
            ? ((keyPool as fc.Arbitrary<string> | undefined) ?? fc.stringMatching(/^[a-z]{1,8}$/))
            : fc.string({ maxLength: 20 });
        const value: fc.Arbitrary<unknown> =
          f.mapKind === "scalar"
            ? choice === "valid"
              ? plainScalar(f.scalar).map((v) => coerce(f.scalar, v))
              : hostileScalar(f.scalar)
            : f.mapKind === "enum"
              ? enumValue(f, choice)
              : isWkt(f.message)
                ? wktValue(f.message, choice)
                : depth >= MAX_DEPTH
                  ? fc.constant({})
                  : this.message(f.message, depth + 1).map((m) => m.json);
        if (choice === "valid") return fc.dictionary(key, value, { maxKeys: 3 });
        return fc.oneof(
          { weight: 2, arbitrary: fc.dictionary(key, value, { minKeys: 1, maxKeys: 4 }) },
          {
            weight: 1,
            arbitrary: fc
              .constantFrom(1_000, 20_000)
              .map((n) =>
                Object.fromEntries(
                  Array.from({ length: n }, (_, i) => [
                    `k${i}`,
                    f.mapKind === "message" ? {} : f.mapKind === "enum" ? 0 : coerce(f.scalar, 0),
                  ]),
                ),
              ),
          },
        );
      }
    }
  }
}

/** The binary form of a generated message. */
export function binaryOf(desc: DescMessage, json: Record<string, unknown>): Uint8Array {
  return toBinary(desc, fromJson(desc, wellFormed(json) as JsonValue));
}

/**
 * The JSON with lone surrogates replaced by U+FFFD, as any UTF-8 encoder writes them: fromJson
 * refuses them, and the binary form cannot carry them (invalid UTF-8 is wire damage instead).
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const toWellFormed = (s: string) => s.replace(LONE_SURROGATE, "\ufffd");
function wellFormed(v: unknown): unknown {
  if (typeof v === "string") return toWellFormed(v);
  if (Array.isArray(v)) return v.map(wellFormed);
  if (v !== null && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [toWellFormed(k), wellFormed(x)]));
  return v;
}

// ---- damage to the JSON text (Connect) ----

export type JsonDamage =
  | { kind: "none" }
  | { kind: "wrongType"; field: string; value: unknown }
  | { kind: "unknownField" }
  | { kind: "malformed"; text: string }
  | { kind: "invalidUtf8"; bytes: Buffer }
  | { kind: "notAnObject"; text: string }
  | { kind: "loneSurrogate" }
  | { kind: "duplicateKey" }
  | { kind: "deepNesting"; depth: number }
  | { kind: "numberOverflow" }
  | { kind: "empty" }
  | { kind: "bom" };

export function jsonDamage(desc: DescMessage): fc.Arbitrary<JsonDamage> {
  const names = desc.fields.map((f) => f.jsonName);
  const options: fc.WeightedArbitrary<JsonDamage>[] = [
    { weight: 24, arbitrary: fc.constant({ kind: "none" as const }) },
    { weight: 2, arbitrary: fc.constant({ kind: "unknownField" as const }) },
    { weight: 1, arbitrary: fc.constantFrom(...MALFORMED_JSON).map((text) => ({ kind: "malformed" as const, text })) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(...INVALID_UTF8_BODIES).map((bytes) => ({ kind: "invalidUtf8" as const, bytes })),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom("[]", "[{}]", "5", '"text"', "true", "null")
        .map((text) => ({ kind: "notAnObject" as const, text })),
    },
    { weight: 1, arbitrary: fc.constant({ kind: "loneSurrogate" as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: "duplicateKey" as const }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(200, 5_000, 100_000).map((depth) => ({ kind: "deepNesting" as const, depth })),
    },
    { weight: 1, arbitrary: fc.constant({ kind: "empty" as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: "bom" as const }) },
  ];
  if (names.length > 0) {
    options.push(
      {
        weight: 4,
        arbitrary: fc
          .tuple(fc.constantFrom(...names), hostileJson)
          .map(([field, value]) => ({ kind: "wrongType" as const, field, value })),
      },
      { weight: 1, arbitrary: fc.constant({ kind: "numberOverflow" as const }) },
    );
  }
  return fc.oneof(...options);
}

/** The Connect request body: the message's JSON with the damage done. */
export function jsonBody(desc: DescMessage, json: Record<string, unknown>, d: JsonDamage): Buffer {
  const first = desc.fields[0]?.jsonName ?? "zz";
  switch (d.kind) {
    case "none":
      return Buffer.from(JSON.stringify(json));
    case "wrongType":
      return Buffer.from(JSON.stringify({ ...json, [d.field]: d.value }));
    case "unknownField":
      return Buffer.from(JSON.stringify({ ...json, zzUnknownField: { a: [1, 2] } }));
    case "malformed":
      return Buffer.from(d.text);
    case "invalidUtf8":
      return d.bytes;
    case "notAnObject":
      return Buffer.from(d.text);
    case "loneSurrogate":
      // Escapes JSON.parse accepts but that name no Unicode scalar value.
      return Buffer.from(JSON.stringify({ ...json, [first]: "\ud800" }).replace('"\\ud800"', '"\\udc00\\ud800x"'));
    case "duplicateKey": {
      const text = JSON.stringify(json);
      return Buffer.from(`{"${first}":"a",${text.slice(1)}`.replace(",}", "}"));
    }
    case "deepNesting":
      // Built as text: JSON.stringify itself overflows the stack on such values.
      return Buffer.from(`{"${first}":${"[".repeat(d.depth)}${"]".repeat(d.depth)}}`);
    case "numberOverflow":
      return Buffer.from(JSON.stringify({ ...json, [first]: 0 }).replace(`"${first}":0`, `"${first}":1e400`));
    case "empty":
      return Buffer.alloc(0);
    case "bom":
      return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(json))]);
  }
}

// ---- damage to the binary form (gRPC) ----

export type WireDamage =
  | { kind: "none" }
  | { kind: "unknownField"; no: number }
  | { kind: "wrongWireType" }
  | { kind: "truncatedVarint" }
  | { kind: "invalidUtf8" }
  | { kind: "negativeLength" }
  | { kind: "lengthOverrun" }
  | { kind: "deepGroups"; depth: number }
  | { kind: "deepNesting"; depth: number }
  | { kind: "fieldZero" }
  | { kind: "truncated"; keep: number };

export function wireDamage(desc: DescMessage): fc.Arbitrary<WireDamage> {
  const options: fc.WeightedArbitrary<WireDamage>[] = [
    { weight: 20, arbitrary: fc.constant({ kind: "none" as const }) },
    { weight: 2, arbitrary: fc.constantFrom(99, 1000, 536870911).map((no) => ({ kind: "unknownField" as const, no })) },
    { weight: 1, arbitrary: fc.constant({ kind: "truncatedVarint" as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: "lengthOverrun" as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: "negativeLength" as const }) },
    { weight: 1, arbitrary: fc.constantFrom(50, 150, 5_000).map((depth) => ({ kind: "deepGroups" as const, depth })) },
    { weight: 1, arbitrary: fc.constant({ kind: "fieldZero" as const }) },
    { weight: 1, arbitrary: fc.nat(20).map((keep) => ({ kind: "truncated" as const, keep })) },
  ];
  if (desc.fields.length > 0) options.push({ weight: 2, arbitrary: fc.constant({ kind: "wrongWireType" as const }) });
  if (desc.fields.some((f) => f.fieldKind === "scalar" && f.scalar === ScalarType.STRING))
    options.push({ weight: 2, arbitrary: fc.constant({ kind: "invalidUtf8" as const }) });
  if (wktPath(desc))
    options.push({
      weight: 1,
      arbitrary: fc.constantFrom(50, 150, 100_000).map((depth) => ({ kind: "deepNesting" as const, depth })),
    });
  return fc.oneof(...options);
}

const writer = () => new BinaryWriter();

function wireTypeOf(f: DescField): WireType {
  if (f.fieldKind !== "scalar") return WireType.LengthDelimited;
  switch (f.scalar) {
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return WireType.Bit64;
    case ScalarType.FLOAT:
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
      return WireType.Bit32;
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return WireType.LengthDelimited;
    default:
      return WireType.Varint;
  }
}

/** Field numbers from the request message down to a Struct, Value or ListValue field, if any. */
function wktPath(desc: DescMessage, seen = new Set<string>()): { numbers: number[]; wkt: DescMessage } | undefined {
  if (seen.has(desc.typeName)) return undefined;
  seen.add(desc.typeName);
  for (const f of desc.fields) {
    const m = f.fieldKind === "message" || (f.fieldKind === "list" && f.listKind === "message") ? f.message : undefined;
    if (!m) continue;
    if (isWkt(m)) return { numbers: [f.number], wkt: m };
    const below = wktPath(m, seen);
    if (below) return { numbers: [f.number, ...below.numbers], wkt: below.wkt };
  }
  return undefined;
}

/** Length-delimited field `no` wrapped around `inner`. */
function wrap(no: number, inner: Uint8Array): Uint8Array {
  return writer().tag(no, WireType.LengthDelimited).bytes(inner).finish();
}

/** A ListValue (or the Value/Struct around it) nested `depth` times, built inside out. */
function deepWkt(wkt: DescMessage, depth: number): Uint8Array {
  // Value{list_value(6): ListValue{values(1): Value{...}}}: two length prefixes per level. The
  // buffer is filled from its end, so each level costs its own few bytes.
  const levelMax = 2 * (1 + 5);
  const buf = new Uint8Array(depth * levelMax + 16);
  let start = buf.length;
  const prepend = (bytes: number[]) => {
    start -= bytes.length;
    buf.set(bytes, start);
  };
  const varint = (n: number) => {
    const out: number[] = [];
    while (n > 0x7f) {
      out.push((n & 0x7f) | 0x80);
      n >>>= 7;
    }
    out.push(n);
    return out;
  };
  prepend([0x08, 0x00]); // Value{null_value: 0}
  for (let i = 0; i < depth; i++) {
    prepend([0x0a, ...varint(buf.length - start)]); // ListValue{values: Value}
    if (i === depth - 1 && wkt.typeName === WKT_LIST) break;
    prepend([0x32, ...varint(buf.length - start)]); // Value{list_value: ListValue}
  }
  let out: Uint8Array = buf.subarray(start);
  if (wkt.typeName === WKT_STRUCT) {
    // Struct{fields(1): {key(1): "a", value(2): Value}}
    const entry = new Uint8Array([0x0a, 0x01, 0x61, ...writer().tag(2, WireType.LengthDelimited).bytes(out).finish()]);
    out = wrap(1, entry);
  }
  return out;
}

/** The binary request message with the damage done. */
export function binaryBody(desc: DescMessage, json: Record<string, unknown>, d: WireDamage): Uint8Array {
  const good = binaryOf(desc, json);
  const concat = (...parts: Uint8Array[]) =>
    Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
  const stringField = desc.fields.find((f) => f.fieldKind === "scalar" && f.scalar === ScalarType.STRING);
  const anyNo = stringField?.number ?? desc.fields[0]?.number ?? 1;
  switch (d.kind) {
    case "none":
      return good;
    case "unknownField":
      return concat(
        good,
        writer()
          .tag(d.no, WireType.Varint)
          .uint64(12345n)
          .tag(d.no + 1 > 536870911 ? 98 : d.no + 1, WireType.LengthDelimited)
          .string("unknown")
          .finish(),
      );
    case "wrongWireType": {
      const f = desc.fields[0]!;
      const wrong = wireTypeOf(f) === WireType.Varint ? WireType.LengthDelimited : WireType.Varint;
      const w = writer().tag(f.number, wrong);
      return concat(good, wrong === WireType.Varint ? w.uint32(7).finish() : w.string("wrong").finish());
    }
    case "truncatedVarint":
      return concat(good, new Uint8Array([(anyNo << 3) | WireType.Varint, 0xff, 0xff, 0xff]));
    case "invalidUtf8":
      return concat(
        good,
        writer()
          .tag(stringField!.number, WireType.LengthDelimited)
          .bytes(new Uint8Array([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]))
          .finish(),
      );
    case "negativeLength":
      // Length -1 as a 64-bit varint (what a signed writer produces).
      return concat(
        good,
        new Uint8Array([
          (anyNo << 3) | WireType.LengthDelimited,
          0xff,
          0xff,
          0xff,
          0xff,
          0xff,
          0xff,
          0xff,
          0xff,
          0xff,
          0x01,
          0x61,
        ]),
      );
    case "lengthOverrun":
      return concat(good, new Uint8Array([(anyNo << 3) | WireType.LengthDelimited, 0xe8, 0x07, 0x61, 0x62]));
    case "deepGroups": {
      const start = writer().tag(999, WireType.StartGroup).finish();
      const end = writer().tag(999, WireType.EndGroup).finish();
      const parts: Uint8Array[] = [good];
      for (let i = 0; i < d.depth; i++) parts.push(start);
      for (let i = 0; i < d.depth; i++) parts.push(end);
      return concat(...parts);
    }
    case "deepNesting": {
      const path = wktPath(desc)!;
      let inner = deepWkt(path.wkt, d.depth);
      for (const no of [...path.numbers].reverse()) inner = wrap(no, inner);
      return concat(good, inner);
    }
    case "fieldZero":
      return concat(good, new Uint8Array([0x00, 0x01]));
    case "truncated":
      return good.subarray(0, Math.min(d.keep, Math.max(0, good.length - 1)));
  }
}
