// A body field that names a field the path binds, as Envoy's transcoder treats it with
// request_validation_options.reject_binding_body_field_collisions (envoy.yaml). Read from
// grpc-httpjson-transcoding's RequestWeaver, which merges path and query bindings into the JSON it
// streams to protobuf's writer:
//  - the body's keys are compared with the proto field names of the bindings (session_id), one
//    object level at a time along the binding's field path; a JSON name (sessionId) is not;
//  - a key that names a bound field with a string value different from the bound text is a 400:
//    "The binding value "A" of the field session_id is conflicting with the value "B" in the
//    body." The same value is no collision;
//  - any other body value for the field (a JSON name, null, an object) is written first and the
//    bound value after it, and protobuf keeps the last value of a field: the path wins.
// So no spelling of a body field acts on another resource than the path names. Query parameters
// are bindings in Envoy too, but here none is bound where a body field could name it (query.ts).
// A number or boolean under a bound field's proto name meets the body reader's type check here,
// and protobuf's writer in Envoy: a 400 either way (no route binds a path variable that is not a
// string on a method with a body).
import type { DescField } from "@bufbuild/protobuf";
import { EdgeHttpError } from "./errors.js";
import type { BodyRule } from "./routes.js";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Throws Envoy's 400 when the body gives the bound field (by proto name) another string than `bound`. */
export function checkBindingCollision(
  fields: readonly DescField[],
  bound: string,
  rule: BodyRule,
  body: unknown,
): void {
  let i = 0;
  if (rule.kind === "field") {
    // body: "<field>" — the body is that field's value; only bindings inside it can collide.
    if (fields[0] !== rule.field) return;
    i = 1;
  } else if (rule.kind !== "all") {
    return;
  }
  if (i >= fields.length) return;
  let node = body;
  for (; i < fields.length - 1; i++) {
    if (!isObject(node) || !Object.hasOwn(node, fields[i]!.name)) return;
    node = node[fields[i]!.name];
  }
  const leaf = fields[fields.length - 1]!;
  // A repeated field gets the body's items and the bound one (the weaver appends it).
  if (leaf.fieldKind === "list" || !isObject(node) || !Object.hasOwn(node, leaf.name)) return;
  const value = node[leaf.name];
  if (typeof value === "string" && value !== bound) {
    throw new EdgeHttpError(
      400,
      `The binding value "${bound}" of the field ${leaf.name} is conflicting with the value "${value}" in the body.`,
    );
  }
}
