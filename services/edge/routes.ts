// The route table: every google.api.http rule (and its additional_bindings) of the routed
// services, compiled once into a PathMatcher plus everything a request needs pre-resolved
// (field paths of path variables, body field, response field, setters).
import {
  getOption,
  hasOption,
  type DescField,
  type DescMessage,
  type DescMethodServerStreaming,
  type DescMethodUnary,
  type DescService,
} from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";
import { FieldIndex, isTraversable, type FieldSetter } from "./field-values.js";
import { PathMatcher } from "./path-matcher.js";
import { parsePathTemplate, type PathTemplate } from "./path-template.js";

export interface PathBinding {
  /** The field path as the template writes it (`thing.id`), for error details. */
  readonly name: string;
  readonly fields: readonly DescField[];
  readonly setter: FieldSetter;
  readonly start: number;
  /** -1: through the end of the path (`**`). */
  readonly end: number;
  readonly multiSegment: boolean;
}

export type BodyRule =
  | { readonly kind: "none" }
  | { readonly kind: "all" }
  | { readonly kind: "field"; readonly field: DescField };

/** The full name of google.api.HttpBody, whose stream the edge passes on as the raw body. */
export const HTTP_BODY = "google.api.HttpBody";

export type RouteMethod =
  | { readonly kind: "unary"; readonly method: DescMethodUnary }
  /** A stream of google.api.HttpBody: the body is its messages' data, sent on as they arrive. */
  | { readonly kind: "http_body_stream"; readonly method: DescMethodServerStreaming };

export interface Route {
  readonly method: DescMethodUnary | DescMethodServerStreaming;
  readonly call: RouteMethod;
  readonly httpMethod: string;
  readonly template: PathTemplate;
  readonly pathBindings: readonly PathBinding[];
  readonly body: BodyRule;
  /** `response_body`: only this field of the response is written. */
  readonly responseField: DescField | undefined;
  /**
   * The request is google.api.HttpBody with body "*": the raw body and its Content-Type become
   * the message (Envoy's transcoder does the same), whatever the media type.
   */
  readonly rawBody: boolean;
}

export interface RouteTable {
  readonly matcher: PathMatcher<Route>;
  readonly fields: FieldIndex;
  readonly routes: readonly Route[];
}

export function buildRouteTable(services: readonly DescService[]): RouteTable {
  const matcher = new PathMatcher<Route>();
  const fields = new FieldIndex();
  const routes: Route[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      if (!hasOption(method, http)) continue; // not part of the REST surface
      const where = `${service.typeName}.${method.name}`;
      let call: RouteMethod;
      if (method.methodKind === "unary") call = { kind: "unary", method: method as DescMethodUnary };
      else if (method.methodKind === "server_streaming" && method.output.typeName === HTTP_BODY) {
        call = { kind: "http_body_stream", method: method as DescMethodServerStreaming };
      } else {
        // Envoy can also stream other messages as a JSON array; no public method needs it, so
        // the edge refuses at start rather than serving something different from Envoy.
        throw new Error(
          `${where}: only unary methods and server streams of ${HTTP_BODY} can carry google.api.http in this edge`,
        );
      }
      fields.add(method.input);
      const rule = getOption(method, http);
      // Envoy honours additional_bindings one level deep; nested ones are ignored, as there.
      const rules = [rule, ...rule.additionalBindings];
      for (const r of rules) {
        const route = compileRule(call, r, fields, where);
        matcher.insert(route.template, route.httpMethod, route);
        routes.push(route);
      }
    }
  }
  return { matcher, fields, routes };
}

function compileRule(call: RouteMethod, rule: HttpRule, fields: FieldIndex, where: string): Route {
  const method = call.method;
  let httpMethod: string;
  let path: string;
  switch (rule.pattern.case) {
    case "get":
    case "put":
    case "post":
    case "delete":
    case "patch":
      httpMethod = rule.pattern.case.toUpperCase();
      path = rule.pattern.value;
      break;
    case "custom":
      httpMethod = rule.pattern.value.kind.toUpperCase();
      path = rule.pattern.value.path;
      break;
    default:
      throw new Error(`${where}: google.api.http rule without a pattern`);
  }
  let template: PathTemplate;
  try {
    template = parsePathTemplate(path);
  } catch (e) {
    throw new Error(`${where}: ${(e as Error).message}`);
  }
  const pathBindings = template.variables.map((v): PathBinding => {
    const resolved = resolveTemplateField(method.input, v.fieldPath, fields);
    if (typeof resolved === "string") throw new Error(`${where}: path variable {${v.fieldPath}}: ${resolved}`);
    return { name: v.fieldPath, ...resolved, start: v.start, end: v.end, multiSegment: v.multiSegment };
  });
  let body: BodyRule;
  if (rule.body === "") body = { kind: "none" };
  else if (rule.body === "*") body = { kind: "all" };
  else body = { kind: "field", field: topLevelField(method.input, rule.body, `${where}: body`) };
  if (call.kind === "http_body_stream" && rule.responseBody !== "")
    throw new Error(`${where}: response_body cannot name a field of a ${HTTP_BODY} stream`);
  const responseField =
    rule.responseBody === "" ? undefined : topLevelField(method.output, rule.responseBody, `${where}: response_body`);
  const rawBody = method.input.typeName === HTTP_BODY && body.kind === "all";
  return { method, call, httpMethod, template, pathBindings, body, responseField, rawBody };
}

function topLevelField(msg: DescMessage, name: string, where: string): DescField {
  const f = msg.fields.find((x) => x.name === name);
  if (f === undefined) throw new Error(`${where}: ${msg.typeName} has no field "${name}"`);
  return f;
}

/** Template field paths use proto field names (`thing.id`), walked through singular messages. */
function resolveTemplateField(
  root: DescMessage,
  fieldPath: string,
  index: FieldIndex,
): { fields: DescField[]; setter: FieldSetter } | string {
  const names = fieldPath.split(".");
  const fields: DescField[] = [];
  let msg = root;
  for (let i = 0; i < names.length; i++) {
    const f = msg.fields.find((x) => x.name === names[i]);
    if (f === undefined) return `${msg.typeName} has no field "${names[i]}"`;
    fields.push(f);
    if (i < names.length - 1) {
      if (!isTraversable(f)) return `"${f.name}" is not a singular message field`;
      msg = f.message;
    }
  }
  const last = fields[fields.length - 1]!;
  const setter = index.setter(last);
  if (setter === undefined || setter.repeated) return `"${last.name}" cannot be bound from a path segment`;
  return { fields, setter };
}
