// Builds the RPC request message of a matched route from the body, the path and the query.
//
// Order matters: the body is parsed first (strictly: unknown keys are a 400), then every path
// variable is applied over it: as Envoy's transcoder configured with
// reject_binding_body_field_collisions, a body field under the proto name of a bound field with
// another value is a 400, and any other spelling of it gives way to the path (collisions.ts), so
// a request never acts on another resource than its path names. Query parameters come last; by
// construction they never address a field the path or body binds.
import { create, fromJson, type DescField, type JsonValue, type Message } from "@bufbuild/protobuf";
import { reflect, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { MESSAGE_RECURSION_LIMIT } from "../platform/json-nesting.js";
import { checkBindingCollision } from "./collisions.js";
import { EdgeHttpError } from "./errors.js";
import { locateJsonError } from "../platform/json-error.js";
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
  for (const binding of route.pathBindings) bindPathVariable(binding, target, parts, route.body, body);
  bindQuery(route, index, target, query);
  return message;
}

function bindPathVariable(
  binding: PathBinding,
  root: ReflectMessage,
  parts: readonly string[],
  rule: BodyRule,
  body: unknown,
): void {
  const end = binding.end === -1 ? parts.length : binding.end;
  const raw = end - binding.start === 1 ? parts[binding.start]! : parts.slice(binding.start, end).join("/");
  const value = decodePathValue(raw, binding.multiSegment);
  if (value === undefined) {
    throw new EdgeHttpError(400, `Invalid percent-encoding in path parameter ${quoteForDetail(binding.name)}`);
  }
  if (body !== undefined) checkBindingCollision(binding.fields, value, rule, body);
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
