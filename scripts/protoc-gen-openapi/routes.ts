// The REST routes of the public services: each google.api.http rule (and its additional
// bindings, one level deep as Envoy honours them) of each method, with the request fields the
// path, the body and the query string bind, as both edges bind them (services/edge/routes.ts).
import {
  type DescField,
  type DescMethod,
  type DescService,
  type FileRegistry,
  getExtension,
  hasExtension,
} from "@bufbuild/protobuf";
import { parsePathTemplate } from "../../services/edge/path-template.js";

export interface RestRoute {
  readonly service: DescService;
  readonly method: DescMethod;
  /** Lower-case, as OpenAPI's path item keys spell it. */
  readonly httpMethod: "get" | "put" | "post" | "delete" | "patch";
  /** The OpenAPI path: each variable named by its field's JSON name (`{sessionId}`). */
  readonly path: string;
  readonly pathFields: readonly DescField[];
  /** "*": the whole request (less the path fields) is the body; a field: that field is; none. */
  readonly body: "*" | DescField | undefined;
}

interface HttpRuleShape {
  pattern: { case: string | undefined; value?: unknown };
  body: string;
  additionalBindings: HttpRuleShape[];
}

const VERBS = new Set(["get", "put", "post", "delete", "patch"]);

/** Every route of the named services, in the order of their methods. */
export function restRoutes(registry: FileRegistry, serviceNames: readonly string[]): RestRoute[] {
  const httpOption = registry.getExtension("google.api.http");
  if (httpOption === undefined) throw new Error("google.api.http is not among the protos");
  const routes: RestRoute[] = [];
  for (const name of serviceNames) {
    const service = registry.getService(name);
    if (service === undefined) throw new Error(`service ${name} (named in envoy.yaml) is not among the protos`);
    for (const method of service.methods) {
      const options = method.proto.options;
      if (options === undefined || !hasExtension(options, httpOption)) continue;
      const rule = getExtension(options, httpOption) as unknown as HttpRuleShape;
      for (const r of [rule, ...rule.additionalBindings]) routes.push(compile(service, method, r));
    }
  }
  return routes;
}

function compile(service: DescService, method: DescMethod, rule: HttpRuleShape): RestRoute {
  const where = `${service.typeName}.${method.name}`;
  const verb = rule.pattern.case;
  if (verb === undefined || !VERBS.has(verb)) throw new Error(`${where}: only get, put, post, delete and patch rules`);
  const template = parsePathTemplate(rule.pattern.value as string);
  const pathFields = template.variables.map((v) => {
    const field = method.input.fields.find((f) => f.name === v.fieldPath);
    if (field === undefined || v.multiSegment) {
      throw new Error(`${where}: path variable {${v.fieldPath}} must be a top-level field of one segment`);
    }
    return field;
  });
  const path = template.source.replace(/\{([A-Za-z0-9_.]+)(=\*)?\}/g, (_, fieldPath: string) => {
    return `{${pathFields.find((f) => f.name === fieldPath)!.jsonName}}`;
  });
  let body: RestRoute["body"];
  if (rule.body === "*") body = "*";
  else if (rule.body !== "") {
    body = method.input.fields.find((f) => f.name === rule.body);
    if (body === undefined) throw new Error(`${where}: body ${rule.body} is not a field of the request`);
  }
  return { service, method, httpMethod: verb as RestRoute["httpMethod"], path, pathFields, body };
}

/** The fields bound by the query string: neither by the path nor the body (none with body "*"). */
export function queryFields(route: RestRoute): DescField[] {
  if (route.body === "*") return [];
  return route.method.input.fields.filter((f) => !route.pathFields.includes(f) && f !== route.body);
}
