// Names the JSON path of a body value protobuf's JSON reader refused, in the client's terms
// (JSON names, array indexes), e.g. "sessionSettings.tags: must be an array". protobuf-es's own
// message names proto fields, or for well-known types no field at all.
import { fromJson, ScalarType, type DescField, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { MESSAGE_RECURSION_LIMIT } from "./json-nesting.js";

const JSON_KIND_BY_WKT: Record<string, string> = {
  "google.protobuf.Struct": "an object",
  "google.protobuf.ListValue": "an array",
  "google.protobuf.Timestamp": "an RFC 3339 timestamp string",
  "google.protobuf.Duration": 'a duration string such as "1.5s"',
  "google.protobuf.FieldMask": "a field mask string",
};

function expectedScalar(type: ScalarType): string {
  switch (type) {
    case ScalarType.STRING:
      return "a string";
    case ScalarType.BOOL:
      return "true or false";
    case ScalarType.BYTES:
      return "a base64 string";
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return "a number";
    default:
      return "an integer in range";
  }
}

function expected(field: DescField, item = false): string {
  if (!item && field.fieldKind === "list") return "an array";
  if (!item && field.fieldKind === "map") return "an object";
  const message =
    field.fieldKind === "message"
      ? field.message
      : field.fieldKind === "list" || field.fieldKind === "map"
        ? field.message
        : undefined;
  if (message) return JSON_KIND_BY_WKT[message.typeName] ?? "an object";
  const scalar =
    field.fieldKind === "scalar"
      ? field.scalar
      : field.fieldKind === "list" || field.fieldKind === "map"
        ? field.scalar
        : undefined;
  if (scalar !== undefined) return expectedScalar(scalar);
  return "one of the allowed values";
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function accepts(desc: DescMessage, json: unknown): boolean {
  try {
    fromJson(desc, json as JsonValue, { recursionLimit: MESSAGE_RECURSION_LIMIT });
    return true;
  } catch {
    return false;
  }
}

/** The JSON path and problem of the first value of `json` that `desc` cannot read. */
export function locateJsonError(desc: DescMessage, json: unknown, path = ""): string | undefined {
  if (!isObject(json)) return `${path || "body"}: must be an object`;
  for (const [key, value] of Object.entries(json)) {
    const field = desc.fields.find((f) => f.jsonName === key || f.name === key);
    const here = path ? `${path}.${key}` : key;
    if (!field) return `${here}: unknown field`;
    if (accepts(desc, { [key]: value })) continue;
    const message =
      field.fieldKind === "message" || field.fieldKind === "list" || field.fieldKind === "map"
        ? field.message
        : undefined;
    const wellKnown = message?.typeName.startsWith("google.protobuf.");
    if (field.fieldKind === "message" && message && !wellKnown && isObject(value)) {
      return locateJsonError(message, value, here) ?? `${here}: must be ${expected(field)}`;
    }
    if (field.fieldKind === "list" && Array.isArray(value)) {
      for (const [i, item] of value.entries()) {
        if (accepts(desc, { [key]: [item] })) continue;
        if (message && !wellKnown && isObject(item))
          return locateJsonError(message, item, `${here}[${i}]`) ?? `${here}[${i}]: must be ${expected(field, true)}`;
        return `${here}[${i}]: must be ${expected(field, true)}`;
      }
    }
    if (field.fieldKind === "map" && isObject(value)) {
      for (const [k, item] of Object.entries(value)) {
        if (accepts(desc, { [key]: { [k]: item } })) continue;
        if (message && !wellKnown && isObject(item))
          return locateJsonError(message, item, `${here}.${k}`) ?? `${here}.${k}: must be ${expected(field, true)}`;
        return `${here}.${k}: must be ${expected(field, true)}`;
      }
    }
    return `${here}: must be ${expected(field)}`;
  }
  return undefined;
}
