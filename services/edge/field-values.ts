// Text → field value conversion for path variables and query parameters, and the per-message
// name index that resolves `startDate` / `start_date` / `filter.range.min` to fields.
//
// Everything descriptor-shaped is computed once (when the route table is built) and cached per
// field or message, so a request only does map lookups and string parsing.
import { ScalarType, fromJson, type DescEnum, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { reflect, type ReflectList, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { hasCustomJsonRepresentation, isWrapperDesc } from "@bufbuild/protobuf/wkt";

/** How one text value is written into one field. */
export interface FieldSetter {
  /**
   * What the text must be, for 400 details: a number field's accepted range ("an integer from 0
   * to 4294967295", "a number"), else the type ("bool", "enum a.b.Color").
   */
  readonly expected: string;
  /** Repeated fields accept the parameter several times; every occurrence appends. */
  readonly repeated: boolean;
  /** Parses `text` and writes it into `target` (append for lists); false when `text` is invalid. */
  apply(target: ReflectMessage, text: string): boolean;
}

// Well-known types whose proto3 JSON form is a single string; a query/path value is that string.
const STRING_JSON_WKTS = new Set([
  "google.protobuf.Timestamp",
  "google.protobuf.Duration",
  "google.protobuf.FieldMask",
]);

// Integers are decimal without sign noise or whitespace; floats use JSON-ish notation plus the
// proto3 JSON spellings of the special values.
const INT_RE = /^-?\d+$/;
const FLOAT_RE = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;
// Leading zeros are legal; anything longer than this is not a number a client meant to send.
const MAX_NUMBER_LENGTH = 64;
const FLOAT_MAX = 3.4028234663852886e38;
const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
const UINT32_MAX = 4294967295;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

// Envoy hands query values to protobuf's ProtoStreamObjectWriter, whose bool conversion uses
// absl's SimpleAtob: these spellings, case-insensitively.
const TRUE_WORDS = new Set(["true", "t", "yes", "y", "1"]);
const FALSE_WORDS = new Set(["false", "f", "no", "n", "0"]);

type Scalar = string | number | bigint | boolean | Uint8Array;

function parseScalar(type: ScalarType, text: string): Scalar | undefined {
  switch (type) {
    case ScalarType.STRING:
      return text;
    case ScalarType.BOOL: {
      const lower = text.toLowerCase();
      if (TRUE_WORDS.has(lower)) return true;
      if (FALSE_WORDS.has(lower)) return false;
      return undefined;
    }
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return parseInt32(text, INT32_MIN, INT32_MAX);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return parseInt32(text, 0, UINT32_MAX);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return parseInt64(text, INT64_MIN, INT64_MAX);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return parseInt64(text, 0n, UINT64_MAX);
    case ScalarType.DOUBLE:
      return parseFloating(text, false);
    case ScalarType.FLOAT:
      return parseFloating(text, true);
    case ScalarType.BYTES:
      return parseBytes(text);
  }
}

function parseInt32(text: string, min: number, max: number): number | undefined {
  if (text.length > MAX_NUMBER_LENGTH || !INT_RE.test(text)) return undefined;
  const n = Number(text);
  return n >= min && n <= max ? n : undefined;
}

function parseInt64(text: string, min: bigint, max: bigint): bigint | undefined {
  if (text.length > MAX_NUMBER_LENGTH || !INT_RE.test(text)) return undefined;
  const n = BigInt(text);
  return n >= min && n <= max ? n : undefined;
}

function parseFloating(text: string, single: boolean): number | undefined {
  if (text === "NaN") return NaN;
  if (text === "Infinity") return Infinity;
  if (text === "-Infinity") return -Infinity;
  if (!FLOAT_RE.test(text)) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n)) return undefined; // "1e999" overflows double
  if (single && Math.abs(n) > FLOAT_MAX) return undefined;
  return n;
}

const BASE64_RE = /^[A-Za-z0-9+/_-]*={0,2}$/;

function parseBytes(text: string): Uint8Array | undefined {
  if (!BASE64_RE.test(text)) return undefined;
  try {
    return base64Decode(text);
  } catch {
    return undefined;
  }
}

function enumNumbers(desc: DescEnum): Map<string, number> {
  const m = new Map<string, number>();
  for (const v of desc.values) m.set(v.name, v.number);
  return m;
}

function enumParser(desc: DescEnum): (text: string) => number | undefined {
  const byName = enumNumbers(desc);
  // Like protobuf's DataPiece::ToEnum (what Envoy's transcoder runs), a declared value's number
  // written as a string is accepted too; an undeclared number is not.
  return (text) => {
    const named = byName.get(text);
    if (named !== undefined) return named;
    const n = parseInt32(text, INT32_MIN, INT32_MAX);
    return n !== undefined && desc.value[n] !== undefined ? n : undefined;
  };
}

/**
 * What a value of a scalar field must be, in the client's terms: a number field names its range
 * (the proto type, "int32", means nothing to a REST client); other types keep their name.
 */
function scalarExpected(type: ScalarType): string {
  switch (type) {
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return `an integer from ${INT32_MIN} to ${INT32_MAX}`;
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return `an integer from 0 to ${UINT32_MAX}`;
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return `an integer from ${INT64_MIN} to ${INT64_MAX}`;
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return `an integer from 0 to ${UINT64_MAX}`;
    case ScalarType.DOUBLE:
      return "a number";
    case ScalarType.FLOAT:
      return `a number from -${FLOAT_MAX} to ${FLOAT_MAX}`;
    default:
      return ScalarType[type].toLowerCase();
  }
}

/**
 * Builds the setter for a field that a path variable or query parameter may target, or
 * undefined when the field cannot be written from one text value (messages other than
 * wrappers and string-valued well-known types, maps, repeated messages).
 */
function buildSetter(field: DescField): FieldSetter | undefined {
  switch (field.fieldKind) {
    case "scalar": {
      const type = field.scalar;
      return textSetter(
        scalarExpected(type),
        false,
        (text) => parseScalar(type, text),
        (target, v) => target.set(field, v),
      );
    }
    case "enum":
      return textSetter(`enum ${field.enum.typeName}`, false, enumParser(field.enum), (target, v) =>
        target.set(field, v),
      );
    case "list": {
      const add = (target: ReflectMessage, v: unknown) => (target.get(field) as ReflectList).add(v);
      if (field.listKind === "scalar") {
        const type = field.scalar;
        return textSetter(scalarExpected(type), true, (text) => parseScalar(type, text), add);
      }
      if (field.listKind === "enum")
        return textSetter(`enum ${field.enum.typeName}`, true, enumParser(field.enum), add);
      return undefined; // repeated messages cannot be bound from text
    }
    case "message": {
      const msg = field.message;
      if (isWrapperDesc(msg)) {
        const valueField = msg.fields[0]!;
        if (valueField.fieldKind !== "scalar") return undefined;
        const type = valueField.scalar;
        return textSetter(
          scalarExpected(type),
          false,
          (text) => parseScalar(type, text),
          (target, v) => {
            const wrapper = reflect(msg);
            wrapper.set(valueField, v);
            target.set(field, wrapper);
          },
        );
      }
      if (STRING_JSON_WKTS.has(msg.typeName)) {
        const parse = (text: string) => {
          try {
            return fromJson(msg, text);
          } catch {
            return undefined;
          }
        };
        return textSetter(msg.typeName, false, parse, (target, parsed) => target.set(field, reflect(msg, parsed)));
      }
      return undefined;
    }
    case "map":
      return undefined;
  }
}

/** A setter that parses one text value (undefined: it does not parse) and stores what it parsed. */
function textSetter<T>(
  expected: string,
  repeated: boolean,
  parse: (text: string) => T | undefined,
  store: (target: ReflectMessage, value: T) => void,
): FieldSetter {
  return {
    expected,
    repeated,
    apply(target, text) {
      const v = parse(text);
      if (v === undefined) return false;
      store(target, v);
      return true;
    },
  };
}

/**
 * Message fields that a dotted name may walk through: singular, ordinary messages (not the
 * well-known types that JSON renders as scalars, whose internals are not addressable).
 */
export function isTraversable(field: DescField): field is DescField & { fieldKind: "message" } {
  return field.fieldKind === "message" && !hasCustomJsonRepresentation(field.message);
}

/** Returns the child message of `target` at `field`, creating and attaching it when unset. */
export function ensureChild(target: ReflectMessage, field: DescField & { fieldKind: "message" }): ReflectMessage {
  if (target.isSet(field)) return target.get(field);
  const child = reflect(field.message);
  // set() stores child.message by reference, so writes through `child` land in `target`.
  target.set(field, child);
  return child;
}

/**
 * Per-message field lookup by JSON name and proto name, and per-field setters. Built eagerly for
 * every message reachable from the routed request types.
 */
export class FieldIndex {
  private readonly names = new Map<DescMessage, Map<string, DescField>>();
  private readonly setters = new Map<DescField, FieldSetter | null>();

  /** Indexes `root` and every message reachable from it. */
  add(root: DescMessage): void {
    const stack = [root];
    while (stack.length > 0) {
      const msg = stack.pop()!;
      if (this.names.has(msg)) continue;
      const byName = new Map<string, DescField>();
      // JSON names first: when a JSON name collides with another field's proto name, the
      // JSON name wins, the order protobuf's JSON reader uses.
      for (const f of msg.fields) byName.set(f.jsonName, f);
      for (const f of msg.fields) if (!byName.has(f.name)) byName.set(f.name, f);
      this.names.set(msg, byName);
      for (const f of msg.fields) {
        this.setters.set(f, buildSetter(f) ?? null);
        if (isTraversable(f)) stack.push(f.message);
      }
    }
  }

  /** A field of `msg` by JSON name or proto name. */
  field(msg: DescMessage, name: string): DescField | undefined {
    let byName = this.names.get(msg);
    if (byName === undefined) {
      this.add(msg);
      byName = this.names.get(msg)!;
    }
    return byName.get(name);
  }

  /** The text setter of a field, or undefined when the field cannot be bound from text. */
  setter(field: DescField): FieldSetter | undefined {
    let s = this.setters.get(field);
    if (s === undefined) {
      s = buildSetter(field) ?? null;
      this.setters.set(field, s);
    }
    return s ?? undefined;
  }
}
