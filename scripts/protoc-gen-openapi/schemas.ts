// Protobuf messages → JSON Schema, as the edges print them (services/platform/printed-json.ts,
// Envoy's print_options): JSON names, int64 as strings, enums by name, and every field without
// presence printed, so such fields are `required` in responses. Requests require only what the
// service refuses to go without (field-rules.ts).
//
// A message may be used by requests and responses with different `required` lists, so a schema
// is built per message and direction, under a placeholder reference; `components()` names them
// once all are known (the message's name, plus "Input" for a request schema that differs from
// the response one) and `resolveRefs` rewrites the placeholders.
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { describe } from "./comments.js";
import type { FieldRule } from "./field-rules.js";
import { type JsonSchema, mergeSchema } from "./json-schema.js";

/**
 * request: what a client sends; response: what the edges print (every field without presence);
 * sparse-response: a JSON answer the service writes itself with protobuf's default printer,
 * which leaves out fields at their default (the OTLP/HTTP answers), so nothing is required.
 */
export type Direction = "request" | "response" | "sparse-response";

const PLACEHOLDER = "#placeholder/";
const COMPONENTS = "#/components/schemas/";

/** The JSON forms of the well-known types (protobuf's JSON mapping), inline rather than referenced. */
const WELL_KNOWN: Readonly<Record<string, JsonSchema>> = {
  "google.protobuf.Struct": { type: "object" },
  "google.protobuf.Value": {},
  "google.protobuf.ListValue": { type: "array" },
  "google.protobuf.Empty": { type: "object", maxProperties: 0 },
  "google.protobuf.Any": { type: "object", properties: { "@type": { type: "string" } }, required: ["@type"] },
  "google.protobuf.Timestamp": { type: "string", format: "date-time" },
  "google.protobuf.Duration": { type: "string", pattern: "^-?[0-9]+(\\.[0-9]+)?s$" },
  "google.protobuf.FieldMask": { type: "string" },
  "google.protobuf.StringValue": { type: ["string", "null"] },
  "google.protobuf.BoolValue": { type: ["boolean", "null"] },
  "google.protobuf.DoubleValue": { type: ["number", "null"] },
  "google.protobuf.FloatValue": { type: ["number", "null"] },
  "google.protobuf.Int32Value": { type: ["integer", "null"], format: "int32" },
  "google.protobuf.UInt32Value": { type: ["integer", "null"], minimum: 0 },
};

function scalarSchema(scalar: ScalarType, direction: Direction): JsonSchema {
  switch (scalar) {
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { type: "number" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", minimum: 0, maximum: 4294967295 };
    // 64-bit integers print as decimal strings; parsers take a JSON number too.
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return direction !== "request"
        ? { type: "string", format: "int64", pattern: "^-?[0-9]+$" }
        : { type: ["string", "integer"], format: "int64" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return direction !== "request"
        ? { type: "string", pattern: "^[0-9]+$" }
        : { type: ["string", "integer"], minimum: 0 };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
  }
}

interface Built {
  readonly message: DescMessage;
  readonly direction: Direction;
  schema: JsonSchema | undefined;
}

export class SchemaBuilder {
  private readonly built = new Map<string, Built>();
  private readonly extra = new Map<string, JsonSchema>();

  constructor(private readonly rules: Readonly<Record<string, FieldRule>>) {}

  /** The rule of a field, if field-rules.ts has one. */
  rule(field: DescField): FieldRule | undefined {
    return this.rules[`${field.parent.typeName}.${field.name}`];
  }

  /** A reference to the message's schema in `direction` (built on first use); well-known types inline. */
  ref(message: DescMessage, direction: Direction): JsonSchema {
    const wellKnown = WELL_KNOWN[message.typeName];
    if (wellKnown !== undefined) return { ...wellKnown };
    const key = `${message.typeName}|${direction}`;
    if (!this.built.has(key)) {
      const entry: Built = { message, direction, schema: undefined };
      this.built.set(key, entry); // before building: a recursive message refers to itself
      entry.schema = this.object(message, direction);
    }
    return { $ref: PLACEHOLDER + key };
  }

  /** A named schema that is no message's (an envelope the plugin composes, the error body). */
  named(name: string, schema: JsonSchema): JsonSchema {
    this.extra.set(name, schema);
    return { $ref: COMPONENTS + name };
  }

  /** The object schema of a message's fields, without those in `omit` (bound by the path). */
  object(message: DescMessage, direction: Direction, omit: ReadonlySet<DescField> = new Set()): JsonSchema {
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    for (const field of message.fields) {
      if (omit.has(field)) continue;
      properties[field.jsonName] = this.field(field, direction);
      if (this.isRequired(field, direction)) required.push(field.jsonName);
    }
    const schema: JsonSchema = { type: "object", properties };
    if (required.length > 0) schema["required"] = required;
    const description = describe(message);
    if (description !== undefined) schema["description"] = description;
    return schema;
  }

  /** The schema of one field's JSON value, with its rule's keywords, comment and deprecation. */
  field(field: DescField, direction: Direction): JsonSchema {
    let schema = this.valueSchema(field, direction);
    const rule = this.rule(field);
    if (rule?.schema !== undefined) schema = mergeSchema(schema, rule.schema);
    const description = describe(field);
    if (description !== undefined) schema["description"] = description;
    if (field.deprecated) schema["deprecated"] = true;
    return schema;
  }

  private valueSchema(field: DescField, direction: Direction): JsonSchema {
    switch (field.fieldKind) {
      case "scalar":
        return scalarSchema(field.scalar, direction);
      case "enum":
        return { type: "string", enum: field.enum.values.map((v) => v.name) };
      case "message":
        return this.ref(field.message, direction);
      case "list": {
        const items =
          field.listKind === "scalar"
            ? scalarSchema(field.scalar, direction)
            : field.listKind === "enum"
              ? { type: "string", enum: field.enum.values.map((v) => v.name) }
              : this.ref(field.message, direction);
        return { type: "array", items };
      }
      case "map": {
        const value =
          field.mapKind === "scalar"
            ? scalarSchema(field.scalar, direction)
            : field.mapKind === "enum"
              ? { type: "string", enum: field.enum.values.map((v) => v.name) }
              : this.ref(field.message, direction);
        return { type: "object", additionalProperties: value };
      }
    }
  }

  private isRequired(field: DescField, direction: Direction): boolean {
    const rule = this.rule(field);
    if (direction === "request") return rule?.required === true;
    if (direction === "sparse-response") return false;
    if (rule?.alwaysPrinted === true) return true;
    if (field.fieldKind === "list" || field.fieldKind === "map") return true;
    if (field.oneof !== undefined || field.fieldKind === "message") return false;
    return field.presence === FeatureSet_FieldPresence.IMPLICIT;
  }

  /**
   * components.schemas: every schema built, named. A message's name alone when no other message
   * used here shares it (else its full name); a request schema that differs from the response
   * schema of the same message gets "Input" after the name.
   */
  components(): { schemas: Record<string, JsonSchema>; names: Map<string, string> } {
    const byShortName = new Map<string, Set<string>>();
    for (const { message } of this.built.values()) {
      const set = byShortName.get(message.name) ?? new Set<string>();
      set.add(message.typeName);
      byShortName.set(message.name, set);
    }
    const shared = this.sharedMessages();
    const names = new Map<string, string>();
    const schemas: Record<string, JsonSchema> = {};
    const entries = [...this.built.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [key, { message, direction, schema }] of entries) {
      const base = byShortName.get(message.name)!.size > 1 ? message.typeName : message.name;
      if (
        direction === "sparse-response" &&
        (this.built.has(`${message.typeName}|response`) || this.built.has(`${message.typeName}|request`))
      ) {
        throw new Error(`${message.typeName} is printed both sparsely and in full: give them distinct names`);
      }
      const both = this.built.has(`${message.typeName}|request`) && this.built.has(`${message.typeName}|response`);
      const name = direction === "request" && both && !shared.has(message.typeName) ? `${base}Input` : base;
      names.set(key, name);
      schemas[name] = schema!;
    }
    for (const [name, schema] of this.extra) {
      if (schemas[name] !== undefined) throw new Error(`schema name ${name} is used twice`);
      schemas[name] = schema;
    }
    return { schemas, names };
  }

  /**
   * The messages used in both directions whose two schemas are the same: equal but for the
   * direction of their references, and every message they refer to shared too (to a fixpoint).
   */
  private sharedMessages(): Set<string> {
    const normalized = (typeName: string, direction: Direction) =>
      JSON.stringify(this.built.get(`${typeName}|${direction}`)?.schema).replaceAll("|request", "|response");
    const shared = new Set<string>();
    for (const { message } of this.built.values()) {
      if (!this.built.has(`${message.typeName}|request`) || !this.built.has(`${message.typeName}|response`)) continue;
      if (normalized(message.typeName, "request") === normalized(message.typeName, "response")) {
        shared.add(message.typeName);
      }
    }
    for (let changed = true; changed; ) {
      changed = false;
      for (const typeName of shared) {
        const refs = normalized(typeName, "response").matchAll(/#placeholder\/([^|"]+)\|/g);
        if ([...refs].some(([, ref]) => this.built.has(`${ref}|request`) && !shared.has(ref!))) {
          shared.delete(typeName);
          changed = true;
        }
      }
    }
    return shared;
  }
}

/** `node` with every placeholder reference rewritten to its component (in place). */
export function resolveRefs(node: unknown, names: ReadonlyMap<string, string>): void {
  if (Array.isArray(node)) {
    for (const item of node) resolveRefs(item, names);
    return;
  }
  if (node === null || typeof node !== "object") return;
  const record = node as Record<string, unknown>;
  const ref = record["$ref"];
  if (typeof ref === "string" && ref.startsWith(PLACEHOLDER)) {
    const name = names.get(ref.slice(PLACEHOLDER.length));
    if (name === undefined) throw new Error(`unresolved schema ${ref}`);
    record["$ref"] = COMPONENTS + name;
  }
  for (const value of Object.values(record)) resolveRefs(value, names);
}
