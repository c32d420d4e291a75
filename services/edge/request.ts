// Builds the RPC request message of a matched route from the body, the path and the query.
//
// Order matters: the body is parsed first (strictly: unknown keys are a 400), then path
// variables are applied except where the body already gave that field (Envoy's transcoder
// keeps the body value on a collision — "the body wins"), then query parameters, which by
// construction never address a field the path or body binds.
import { create, fromJson, type DescField, type JsonValue, type Message } from "@bufbuild/protobuf";
import { reflect, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { MESSAGE_RECURSION_LIMIT } from "../platform/json-nesting.js";
import { EdgeHttpError } from "./errors.js";
import { locateJsonError } from "./json-error.js";
import { ensureChild, type FieldIndex } from "./field-values.js";
import { decodePathValue } from "./percent.js";
import { bindQuery, quoteForDetail } from "./query.js";
import type { BodyRule, PathBinding, Route } from "./routes.js";

export function buildRequestMessage(
  route: Route,
  index: FieldIndex,
  parts: readonly string[],
  query: string,
  body: unknown,
): Message {
  const input = route.method.input;
  let message: Message;
  if (body === undefined || route.body.kind === "none") {
    message = create(input);
  } else {
    // body "field": parse `{ "<field>": body }` so any field kind (message, scalar, list, map)
    // goes through the same strict proto3 JSON reader as body "*".
    const json = route.body.kind === "all" ? body : { [route.body.field.jsonName]: body };
    try {
      message = fromJson(input, json as JsonValue, { recursionLimit: MESSAGE_RECURSION_LIMIT });
    } catch (e) {
      // Name the offending value by its JSON path; fall back to protobuf's own wording.
      throw new EdgeHttpError(400, locateJsonError(input, json) ?? `Invalid request body: ${(e as Error).message}`);
    }
  }
  const target = reflect(input, message);
  for (const binding of route.pathBindings) {
    if (body !== undefined && coveredByBody(binding.fields, route.body, body)) continue;
    bindPathVariable(binding, target, parts);
  }
  bindQuery(route, index, target, query);
  return message;
}

function bindPathVariable(binding: PathBinding, root: ReflectMessage, parts: readonly string[]): void {
  const end = binding.end === -1 ? parts.length : binding.end;
  const raw = end - binding.start === 1 ? parts[binding.start]! : parts.slice(binding.start, end).join("/");
  const value = decodePathValue(raw, binding.multiSegment);
  if (value === undefined) {
    throw new EdgeHttpError(400, `Invalid percent-encoding in path parameter ${quoteForDetail(binding.name)}`);
  }
  let target = root;
  for (let i = 0; i < binding.fields.length - 1; i++) {
    target = ensureChild(target, binding.fields[i] as DescField & { fieldKind: "message" });
  }
  if (!binding.setter.apply(target, value)) {
    throw new EdgeHttpError(
      400,
      `Invalid value ${quoteForDetail(value)} for path parameter ${quoteForDetail(binding.name)}: expected ${binding.setter.expected}`,
    );
  }
}

/** Does the JSON body give a value (even null) for this field path? Keys may be JSON or proto names. */
function coveredByBody(fields: readonly DescField[], rule: BodyRule, body: unknown): boolean {
  let node = body;
  let i = 0;
  if (rule.kind === "field") {
    if (fields[0] !== rule.field) return false;
    i = 1;
  }
  for (; i < fields.length; i++) {
    if (node === null || typeof node !== "object" || Array.isArray(node)) return false;
    const f = fields[i]!;
    const obj = node as Record<string, unknown>;
    if (Object.hasOwn(obj, f.jsonName)) node = obj[f.jsonName];
    else if (Object.hasOwn(obj, f.name)) node = obj[f.name];
    else return false;
  }
  return true;
}
