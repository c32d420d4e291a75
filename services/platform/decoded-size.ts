// How much memory a binary protobuf message takes once decoded, estimated from its bytes
// before it is decoded, so that a message whose decoded form would be far larger than its bytes
// is refused instead of built.
//
// Why: an element of a repeated message field can be empty, two bytes on the wire, and
// @bufbuild/protobuf's fromBinary makes an object of it with every field set to its default
// (lists and maps as empty arrays and objects of their own): 50–70 times its bytes in heap. A
// 32 MiB request of them was 1.5–2.2 GB and seconds of CPU, past every pod's memory limit
// (BENCHMARKS.md, "Decode amplification"; `npm run bench:decode-amplification`).
//
// The scan walks the wire format as fromBinary reads it (from-binary.ts there: a known field is
// read by its descriptor whatever its wire type; a scalar list is packed when length-delimited;
// an unknown field is skipped by its wire type and kept), allocating nothing, and adds up what
// each value costs in V8's heap (COST, below: object and array headers, a slot per element, a
// BigInt per 64-bit integer, a view per bytes value, the characters of a string). It stops as
// soon as the sum passes the limit. Bytes it cannot read (a truncated value, a bad wire type,
// nesting past the decoder's recursion limit) end the scan with what was counted so far: the
// decoder then refuses the message at the same place, having built no more than that.
//
// The figures are estimates, of the right order rather than exact: the benchmark prints them
// beside the heap fromBinary actually takes for the same messages.
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";

/**
 * What the heap may hold for a message of `n` bytes: DECODE_FACTOR times its bytes, plus a
 * constant so that small messages are never refused. Messages as clients write them decode to
 * 1.5–5 times their bytes (a value in every few fields of many); 8 leaves room for sparse ones.
 */
export const DECODE_FACTOR = 8;
export const DECODE_SLACK_BYTES = 1 << 20;

/** The least heap one decoded message takes (COST.message, below). */
export const MESSAGE_HEAP_BYTES = 88;

/** The decoded size allowed for a message of `messageBytes` bytes. */
export function decodedSizeLimit(messageBytes: number): number {
  return DECODE_FACTOR * messageBytes + DECODE_SLACK_BYTES;
}

/**
 * Heap bytes per decoded value, in Node 20's V8, measured per message type (an empty message
 * of each request type, 100,000 at a time) and rounded up to a model of a few terms.
 */
const COST = {
  /** An empty message object, however many scalar fields it declares (their zero values are shared)... */
  message: MESSAGE_HEAP_BYTES,
  /** ...and a little per declared field or oneof (larger objects take larger shapes). */
  member: 2,
  /** A list field's empty array, a map field's empty object, a bytes field's empty Uint8Array. */
  list: 32,
  map: 48,
  bytesZero: 40,
  slot: 8,
  /** `{ case, value }`, per oneof member read. */
  oneofCase: 32,
  /** A string's header; its characters are added (two bytes each: V8 keeps some strings so). */
  string: 16,
  /** A Uint8Array view (bytes values, unknown fields' data). */
  view: 96,
  bigint: 24,
  /** An unknown field's `{ no, wireType, data }`, besides its view; and the `$unknown` array. */
  unknown: 40,
  /** A map entry: a property of the map object. */
  mapEntry: 32,
} as const;

export interface DecodedSizeOptions {
  /** As fromBinary's option: unknown fields are kept (the default) and cost memory. */
  readonly readUnknownFields?: boolean;
  /** As fromBinary's option (default 100): the scan stops where the decoder would refuse. */
  readonly recursionLimit?: number;
}

export type DecodedSize =
  /** `readable`: false when the scan stopped at bytes the decoder will refuse. */
  | { readonly within: true; readonly bytes: number; readonly readable: boolean }
  /** `field`: where the scan was when it passed the limit, as `files[].name` names it. */
  | { readonly within: false; readonly field: string };

/**
 * Estimates the heap fromBinary(desc, bytes) would take, stopping once it passes `limit`.
 * A message the decoder would refuse is `within` with what the scan counted before the bytes
 * went wrong: the decoder's own error then answers for it.
 */
export function decodedSize(
  desc: DescMessage,
  bytes: Uint8Array,
  limit: number,
  options: DecodedSizeOptions = {},
): DecodedSize {
  const scan = new Scan(bytes, limit, options.readUnknownFields ?? true, options.recursionLimit ?? 100);
  try {
    scan.message(shapeOf(desc), bytes.length, 1);
  } catch (e) {
    if (e === OVER) return { within: false, field: scan.path.join(".") || "(the message)" };
    if (e !== MALFORMED) throw e;
    return { within: true, bytes: scan.total, readable: false };
  }
  return { within: true, bytes: scan.total, readable: true };
}

const OVER = Symbol("over the limit");
const MALFORMED = Symbol("not readable");

enum Read {
  Varint,
  Fixed32,
  Fixed64,
  Delimited,
}

/** What reading one value of a field does, and what it costs beyond its slot. */
interface FieldShape {
  /** As the refusal names it: `files[]` for a list. */
  readonly name: string;
  readonly kind: "scalar" | "list" | "message" | "listMessage" | "map";
  readonly read: Read;
  /** Heap per value read, beyond a string's characters. */
  readonly cost: number;
  /** A scalar list whose values may come packed (not strings or bytes). */
  readonly packable: boolean;
  readonly stringChars: boolean;
  /** Message and list-of-message fields: the element's shape (resolved lazily: types recurse). */
  readonly child?: () => MessageShape;
  /** Map fields: the key's and the value's reads and costs. */
  readonly entry?: {
    readonly key: Read;
    readonly keyCost: number;
    readonly value: Read;
    readonly valueCost: number;
    readonly valueChars: boolean;
    readonly child?: () => MessageShape;
  };
}

interface MessageShape {
  /** An empty message: the object, its slots, and the empty lists and maps it starts with. */
  readonly cost: number;
  readonly fields: ReadonlyMap<number, FieldShape>;
}

const shapes = new WeakMap<DescMessage, MessageShape>();

function shapeOf(desc: DescMessage): MessageShape {
  let shape = shapes.get(desc);
  if (shape !== undefined) return shape;
  let cost = COST.message + COST.member * desc.members.length;
  const fields = new Map<number, FieldShape>();
  shape = { cost: 0, fields };
  shapes.set(desc, shape);
  for (const field of desc.fields) {
    if (field.fieldKind === "list") cost += COST.list;
    if (field.fieldKind === "map") cost += COST.map;
    if (field.fieldKind === "scalar" && field.scalar === ScalarType.BYTES && field.oneof === undefined)
      cost += COST.bytesZero;
    fields.set(field.number, fieldShape(field));
  }
  (shape as { cost: number }).cost = cost;
  return shape;
}

function fieldShape(field: DescField): FieldShape {
  const oneof = field.oneof === undefined ? 0 : COST.oneofCase;
  const name = field.fieldKind === "list" ? `${field.name}[]` : field.name;
  switch (field.fieldKind) {
    case "scalar":
      return scalarField(name, "scalar", field.scalar, field.longAsString, oneof);
    case "enum":
      return scalarField(name, "scalar", ScalarType.INT32, false, oneof);
    case "message": {
      const message = field.message;
      return {
        name,
        kind: "message",
        read: Read.Delimited,
        cost: oneof,
        packable: false,
        stringChars: false,
        child: () => shapeOf(message),
      };
    }
    case "list": {
      if (field.listKind === "message") {
        const message = field.message;
        return {
          name,
          kind: "listMessage",
          read: Read.Delimited,
          cost: COST.slot,
          packable: false,
          stringChars: false,
          child: () => shapeOf(message),
        };
      }
      const scalar = field.listKind === "enum" ? ScalarType.INT32 : field.scalar;
      const longAsString = field.listKind === "scalar" ? field.longAsString : false;
      return scalarField(name, "list", scalar, longAsString, COST.slot);
    }
    case "map": {
      const key = scalarField(name, "scalar", field.mapKey, false, 0);
      const value =
        field.mapKind === "message"
          ? undefined
          : scalarField(name, "scalar", field.mapKind === "enum" ? ScalarType.INT32 : field.scalar, false, 0);
      const message = field.mapKind === "message" ? field.message : undefined;
      return {
        name,
        kind: "map",
        read: Read.Delimited,
        cost: COST.mapEntry,
        packable: false,
        stringChars: false,
        entry: {
          key: key.read,
          keyCost: key.cost,
          value: value?.read ?? Read.Delimited,
          valueCost: value?.cost ?? 0,
          valueChars: value?.stringChars ?? false,
          child: message === undefined ? undefined : () => shapeOf(message),
        },
      };
    }
  }
}

function scalarField(
  name: string,
  kind: "scalar" | "list",
  scalar: ScalarType,
  longAsString: boolean,
  extra: number,
): FieldShape {
  const shape = (read: Read, cost: number, stringChars = false) => ({
    name,
    kind,
    read,
    cost: cost + extra,
    packable: read !== Read.Delimited,
    stringChars,
  });
  switch (scalar) {
    case ScalarType.STRING:
      return shape(Read.Delimited, COST.string, true);
    case ScalarType.BYTES:
      return shape(Read.Delimited, COST.view);
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
      // As a string: up to 20 characters.
      return shape(Read.Varint, longAsString ? COST.string + 20 : COST.bigint);
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return shape(Read.Fixed64, longAsString ? COST.string + 20 : COST.bigint);
    case ScalarType.DOUBLE:
      // A double in a field or an array element is a heap number unless V8 keeps it unboxed.
      return shape(Read.Fixed64, 16);
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
    case ScalarType.FLOAT:
      return shape(Read.Fixed32, 0);
    default:
      // int32, uint32, sint32, bool, enum: small integers or booleans, in their slot.
      return shape(Read.Varint, 0);
  }
}

class Scan {
  total = 0;
  /** Field names from the top message down to where the scan is. */
  readonly path: string[] = [];
  pos = 0;
  /** The last tag read (tag()). */
  private fieldNo = 0;
  private wireType = 0;

  constructor(
    private readonly buf: Uint8Array,
    private readonly limit: number,
    private readonly readUnknownFields: boolean,
    private readonly recursionLimit: number,
  ) {}

  private add(cost: number): void {
    this.total += cost;
    if (this.total > this.limit) throw OVER;
  }

  /**
   * Reads a message's fields from the position up to `end`, as the decoder does: `end` may lie
   * past the buffer (the decoder reads on and fails there) and a field may overrun it (the
   * decoder goes on from where the field ended). `depth` counts as fromBinary's does; `fresh`
   * is false for a message read into one that exists (its object is not made again).
   */
  message(shape: MessageShape, end: number, depth: number, fresh = true): void {
    if (depth > this.recursionLimit) throw MALFORMED;
    if (fresh) this.add(shape.cost);
    let unknowns = 0;
    while (this.pos < end) {
      this.tag();
      const { fieldNo, wireType } = this;
      const field = shape.fields.get(fieldNo);
      if (field === undefined) {
        this.skip(wireType, fieldNo, this.recursionLimit - depth);
        if (this.readUnknownFields) {
          // The `$unknown` array once, then an object, a view and a slot per field.
          this.add((unknowns++ === 0 ? COST.list : 0) + COST.unknown + COST.view + COST.slot);
        }
        continue;
      }
      this.path.push(field.name);
      this.field(field, wireType, depth);
      this.path.pop();
    }
  }

  private field(field: FieldShape, wireType: number, depth: number): void {
    switch (field.kind) {
      case "message":
      case "listMessage": {
        this.add(field.cost);
        const length = this.varint32();
        this.message(field.child!(), this.pos + length, depth + 1);
        return;
      }
      case "map": {
        this.add(field.cost);
        const entry = field.entry!;
        const length = this.varint32();
        const end = this.pos + length;
        let valued = false;
        while (this.pos < end) {
          this.tag();
          const { fieldNo, wireType: entryWireType } = this;
          if (fieldNo === 1) {
            this.value(entry.key, entry.keyCost, entry.key === Read.Delimited);
          } else if (fieldNo === 2 && entry.child !== undefined) {
            // A second value in one entry merges into the first: one message.
            const valueLength = this.varint32();
            this.message(entry.child(), this.pos + valueLength, depth + 1, !valued);
            valued = true;
          } else if (fieldNo === 2) {
            this.value(entry.value, entry.valueCost, entry.valueChars);
          } else {
            this.skip(entryWireType, fieldNo, this.recursionLimit - depth);
          }
        }
        // An entry without a message value gets a new empty one.
        if (entry.child !== undefined && !valued) this.add(entry.child().cost);
        return;
      }
      case "list":
        if (wireType === 2 && field.packable) {
          const length = this.varint32();
          const end = this.pos + length;
          while (this.pos < end) this.value(field.read, field.cost, false);
          return;
        }
        this.value(field.read, field.cost, field.stringChars);
        return;
      case "scalar":
        this.value(field.read, field.cost, field.stringChars);
        return;
    }
  }

  /** Reads one value as `read` says, adding `cost` (and a string's characters). */
  private value(read: Read, cost: number, chars: boolean): void {
    switch (read) {
      case Read.Varint:
        this.skipVarint();
        break;
      case Read.Fixed32:
        this.advance(4);
        break;
      case Read.Fixed64:
        this.advance(8);
        break;
      case Read.Delimited: {
        const length = this.varint32();
        this.advance(length);
        // Characters: one byte each in a one-byte string, two in a two-byte one.
        if (chars) cost += 2 * length;
        break;
      }
    }
    this.add(cost);
  }

  /** As BinaryReader.skip: past one value of an unknown field, groups included. */
  private skip(wireType: number, fieldNo: number, recursionLimit: number): void {
    switch (wireType) {
      case 0:
        // The decoder skips an unknown varint of any length (no ten-byte cap, unlike a read).
        while (true) {
          if (this.pos >= this.buf.length) throw MALFORMED;
          if ((this.buf[this.pos++]! & 0x80) === 0) return;
        }
      case 1:
        this.advance(8);
        return;
      case 5:
        this.advance(4);
        return;
      case 2:
        this.advance(this.varint32());
        return;
      case 3:
        if (recursionLimit <= 0) throw MALFORMED;
        for (;;) {
          this.tag();
          const { fieldNo: no, wireType: type } = this;
          if (type === 4) {
            if (no !== fieldNo) throw MALFORMED;
            return;
          }
          this.skip(type, no, recursionLimit - 1);
        }
      default:
        throw MALFORMED;
    }
  }

  /** As BinaryReader.tag: reads a field number and a wire type the decoder accepts, into these two. */
  private tag(): void {
    const start = this.pos;
    const tag = this.varint32();
    const read = this.pos - start;
    if (read > 5 || (read === 5 && this.buf[this.pos - 1]! > 0x0f)) throw MALFORMED;
    const fieldNo = tag >>> 3;
    const wireType = tag & 7;
    if (fieldNo <= 0 || wireType > 5) throw MALFORMED;
    this.fieldNo = fieldNo;
    this.wireType = wireType;
  }

  /** Moves `length` bytes on, which must be within the buffer (the decoder's assertBounds). */
  private advance(length: number): void {
    this.pos += length;
    if (this.pos > this.buf.length) throw MALFORMED;
  }

  /** A varint of up to ten bytes, as the decoder's uint32 reads it (the high bits dropped). */
  private varint32(): number {
    let result = 0;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw MALFORMED;
      const b = this.buf[this.pos++]!;
      if (i < 5) result |= (b & 0x7f) << (7 * i);
      if ((b & 0x80) === 0) return result >>> 0;
    }
    throw MALFORMED;
  }

  private skipVarint(): void {
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw MALFORMED;
      if ((this.buf[this.pos++]! & 0x80) === 0) return;
    }
    throw MALFORMED;
  }
}
