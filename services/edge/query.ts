// Query parameters → request fields, as Envoy's transcoder with
// reject_unknown_query_parameters and query_param_unescape_plus=false binds them:
//  - a name is a dotted field path; each part matches a field's JSON name or proto name;
//  - only fields bound by neither the path nor the body are query parameters (so with
//    `body: "*"` none is), anything else is a 400 naming the parameter;
//  - repeated scalar fields take the parameter several times;
//  - values are percent-decoded (`+` stays `+`) and parsed by the field's type.
import type { DescField } from "@bufbuild/protobuf";
import type { ReflectMessage } from "@bufbuild/protobuf/reflect";
import { EdgeHttpError } from "./errors.js";
import { ensureChild, isTraversable, type FieldIndex } from "./field-values.js";
import { decodeQueryValue } from "./percent.js";
import type { Route } from "./routes.js";

/** Shortens echoed client input so an error detail stays readable. */
export function quoteForDetail(value: string): string {
  return JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value);
}

export function bindQuery(route: Route, index: FieldIndex, target: ReflectMessage, query: string): void {
  if (query === "") return;
  for (const param of query.split("&")) {
    const eq = param.indexOf("=");
    // Envoy's ExtractBindingsFromQueryParameters skips a parameter without '=' or without a name
    // (`?flag`, `?=x`); it is neither bound nor reported as unknown.
    if (eq <= 0) continue;
    bindOne(route, index, target, param.slice(0, eq), param.slice(eq + 1));
  }
}

function bindOne(route: Route, index: FieldIndex, root: ReflectMessage, name: string, rawValue: string): void {
  const fields = resolve(route, index, name);
  const leaf = fields[fields.length - 1]!;
  const setter = index.setter(leaf);
  if (setter === undefined) {
    throw new EdgeHttpError(
      400,
      `Query parameter ${quoteForDetail(name)} names a field that cannot be set from a query string`,
    );
  }
  const value = decodeQueryValue(rawValue);
  if (value === undefined) {
    throw new EdgeHttpError(400, `Query parameter ${quoteForDetail(name)} is not valid UTF-8 after percent-decoding`);
  }
  let target = root;
  for (let i = 0; i < fields.length - 1; i++) {
    target = ensureChild(target, fields[i] as DescField & { fieldKind: "message" });
  }
  if (!setter.apply(target, value)) {
    throw new EdgeHttpError(
      400,
      `Invalid value ${quoteForDetail(value)} for query parameter ${quoteForDetail(name)}: expected ${setter.expected}`,
    );
  }
}

function resolve(route: Route, index: FieldIndex, name: string): DescField[] {
  const unknown = () => new EdgeHttpError(400, `Unknown query parameter ${quoteForDetail(name)}`);
  if (route.body.kind === "all") throw unknown();
  const fields: DescField[] = [];
  let msg = route.method.input;
  let start = 0;
  for (;;) {
    const dot = name.indexOf(".", start);
    const part = dot === -1 ? name.slice(start) : name.slice(start, dot);
    const field = index.field(msg, part);
    if (field === undefined) throw unknown();
    fields.push(field);
    if (dot === -1) break;
    if (!isTraversable(field)) throw unknown();
    msg = field.message;
    start = dot + 1;
  }
  if (route.body.kind === "field" && fields[0] === route.body.field) {
    throw new EdgeHttpError(
      400,
      `Query parameter ${quoteForDetail(name)} is not allowed: that field comes from the request body`,
    );
  }
  for (const b of route.pathBindings) {
    if (overlaps(b.fields, fields)) {
      throw new EdgeHttpError(
        400,
        `Query parameter ${quoteForDetail(name)} is not allowed: that field comes from the request path`,
      );
    }
  }
  return fields;
}

/** True when one field path is a prefix of the other (they address the same data). */
function overlaps(a: readonly DescField[], b: readonly DescField[]): boolean {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return false;
  return true;
}
