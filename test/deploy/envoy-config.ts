// Reading envoy.yaml and checking what a strict parse cannot: that its parts refer to each other
// and to the rest of the system correctly (routes → clusters, transcoder → descriptor set and the
// public services, every REST path → a route → the cluster of the module serving it, internal
// services → no route at all, the Lua filter before the transcoder, ...).
//
// Routes are matched the way Envoy's router matches them after the transcoder rewrote a REST
// request into `POST /<package>.<Service>/<Method>` with the client's verb in
// x-envoy-original-method. Matchers this file does not model are reported, not guessed.
import { readFileSync } from "node:fs";
import YAML from "yaml";
import { reasonPhrase } from "../../services/edge/status.js";
import type { DescribedService } from "./descriptor.js";
import type { ModuleFacts } from "./service-modules.js";

export const ENVOY_YAML_PATH = new URL("../../envoy.yaml", import.meta.url);
export const LUA_MAPPER_PATH = new URL("../../deploy/envoy/error-mapper.lua", import.meta.url);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Node = any;

const HCM_TYPE =
  "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";
const LUA_TYPE = "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua";
const TRANSCODER_TYPE = "type.googleapis.com/envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder";
const ROUTER_TYPE = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router";
const H2_OPTIONS_KEY = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";

/** Retry conditions that only fire when the request never reached a pod: safe for any verb. */
const SAFE_RETRY_ON = new Set(["connect-failure", "refused-stream", "reset-before-request"]);
const LOCALHOST = new Set(["127.0.0.1", "::1", "localhost"]);

/** YAML as Envoy reads it: YAML 1.2, duplicate keys are errors. */
export function parseEnvoyYaml(text: string): Node {
  return YAML.parse(text, { version: "1.2", uniqueKeys: true, strict: true, prettyErrors: true });
}

export function readEnvoyYaml(): string {
  return readFileSync(ENVOY_YAML_PATH, "utf8");
}

// ---------------------------------------------------------------------------------------------
// Finding things.

function typeOf(typed: Node): string | undefined {
  return typed?.typed_config?.["@type"] ?? typed?.typedConfig?.["@type"];
}

function listeners(config: Node): Node[] {
  return config?.static_resources?.listeners ?? [];
}

export function clusters(config: Node): Node[] {
  return config?.static_resources?.clusters ?? [];
}

/** The HTTP connection managers, by listener name. */
function connectionManagers(config: Node): { listener: string; hcm: Node; port: number }[] {
  const out: { listener: string; hcm: Node; port: number }[] = [];
  for (const l of listeners(config)) {
    for (const chain of l.filter_chains ?? []) {
      for (const f of chain.filters ?? []) {
        if (typeOf(f) === HCM_TYPE)
          out.push({ listener: l.name, hcm: f.typed_config, port: l.address?.socket_address?.port_value });
      }
    }
  }
  return out;
}

/** The public listener: the one whose connection manager runs the transcoder. */
export function publicEdge(config: Node): { hcm: Node; port: number; filters: Node[] } | undefined {
  for (const { hcm, port } of connectionManagers(config)) {
    const filters: Node[] = hcm.http_filters ?? [];
    if (filters.some((f) => typeOf(f) === TRANSCODER_TYPE)) return { hcm, port, filters };
  }
  return undefined;
}

export function transcoderOf(config: Node): Node | undefined {
  return publicEdge(config)?.filters.find((f) => typeOf(f) === TRANSCODER_TYPE)?.typed_config;
}

export function luaFilterOf(config: Node): Node | undefined {
  return publicEdge(config)?.filters.find((f) => typeOf(f) === LUA_TYPE)?.typed_config;
}

export interface ClusterEndpoint {
  readonly cluster: string;
  readonly address: string;
  readonly port: number;
}

export function clusterEndpoints(config: Node): ClusterEndpoint[] {
  const out: ClusterEndpoint[] = [];
  for (const c of clusters(config)) {
    for (const group of c.load_assignment?.endpoints ?? []) {
      for (const lb of group.lb_endpoints ?? []) {
        const sa = lb.endpoint?.address?.socket_address;
        if (sa) out.push({ cluster: c.name, address: sa.address, port: sa.port_value });
      }
    }
  }
  return out;
}

/** Files Envoy reads at start: where the config expects the descriptor set and the Lua script. */
export function envoyFiles(config: Node): { descriptor?: string; lua?: string } {
  return {
    descriptor: transcoderOf(config)?.proto_descriptor,
    lua: luaFilterOf(config)?.default_source_code?.filename,
  };
}

// ---------------------------------------------------------------------------------------------
// Route matching.

export interface RouteRequest {
  readonly path: string;
  /** Lowercased names. */
  readonly headers: Readonly<Record<string, string>>;
}

function stringMatches(m: Node, value: string | undefined): boolean {
  if (value === undefined) return false;
  const ci = m.ignore_case === true;
  const v = ci ? value.toLowerCase() : value;
  const norm = (s: string) => (ci ? s.toLowerCase() : s);
  if (m.exact !== undefined) return v === norm(m.exact);
  if (m.prefix !== undefined) return v.startsWith(norm(m.prefix));
  if (m.suffix !== undefined) return v.endsWith(norm(m.suffix));
  if (m.contains !== undefined) return v.includes(norm(m.contains));
  if (m.safe_regex !== undefined) return new RegExp(`^(?:${m.safe_regex.regex})$`, ci ? "i" : "").test(value);
  throw new Error(`string matcher ${JSON.stringify(m)} is not modelled by this check`);
}

function headerMatches(hm: Node, headers: Readonly<Record<string, string>>): boolean {
  const value = headers[String(hm.name).toLowerCase()];
  let ok: boolean;
  if (hm.present_match !== undefined) ok = (value !== undefined) === hm.present_match;
  else if (hm.string_match !== undefined) ok = stringMatches(hm.string_match, value);
  else throw new Error(`header matcher ${JSON.stringify(hm)} is not modelled by this check`);
  return hm.invert_match === true ? !ok : ok;
}

function routeMatches(match: Node, req: RouteRequest): boolean {
  const known = new Set(["prefix", "path", "safe_regex", "path_separated_prefix", "headers", "grpc", "case_sensitive"]);
  for (const key of Object.keys(match)) {
    if (!known.has(key)) throw new Error(`route match field ${key} is not modelled by this check`);
  }
  const ci = match.case_sensitive === false;
  const path = ci ? req.path.toLowerCase() : req.path;
  const norm = (s: string) => (ci ? s.toLowerCase() : s);
  let pathOk: boolean;
  if (match.prefix !== undefined) pathOk = path.startsWith(norm(match.prefix));
  else if (match.path !== undefined) pathOk = path === norm(match.path);
  else if (match.path_separated_prefix !== undefined)
    pathOk = path === norm(match.path_separated_prefix) || path.startsWith(`${norm(match.path_separated_prefix)}/`);
  else if (match.safe_regex !== undefined) pathOk = new RegExp(`^(?:${match.safe_regex.regex})$`).test(req.path);
  else throw new Error(`route match ${JSON.stringify(match)} has no path matcher this check models`);
  if (!pathOk) return false;
  if (match.grpc !== undefined && !(req.headers["content-type"] ?? "").startsWith("application/grpc")) return false;
  return (match.headers ?? []).every((hm: Node) => headerMatches(hm, req.headers));
}

function domainMatches(domain: string, host: string): boolean {
  if (domain === "*") return true;
  if (domain.startsWith("*")) return host.endsWith(domain.slice(1));
  if (domain.endsWith("*")) return host.startsWith(domain.slice(0, -1));
  return host === domain;
}

/** The first route of the public listener that matches, as Envoy's router picks it; undefined: 404. */
export function matchRoute(config: Node, req: RouteRequest, host = "api.example.com"): Node | undefined {
  const vhosts: Node[] = publicEdge(config)?.hcm.route_config?.virtual_hosts ?? [];
  const vhost = vhosts.find((v) => (v.domains ?? []).some((d: string) => domainMatches(d, host)));
  return (vhost?.routes ?? []).find((r: Node) => routeMatches(r.match ?? {}, req));
}

/** The request the transcoder hands the router for a REST call bound to Service/Method. */
export function transcodedRequest(service: string, method: string, verb: string): RouteRequest {
  return {
    path: `/${service}/${method}`,
    headers: { "content-type": "application/grpc", "x-envoy-original-method": verb, te: "trailers" },
  };
}

// ---------------------------------------------------------------------------------------------
// The checks. Each returns problems as "where: what" lines; an empty list means consistent.

export function checkEnvoyCrossReferences(
  config: Node,
  services: ReadonlyMap<string, DescribedService>,
  modules: readonly ModuleFacts[],
): string[] {
  const problems: string[] = [];
  const fail = (where: string, what: string) => problems.push(`${where}: ${what}`);

  const admin = config?.admin?.address?.socket_address?.address;
  if (!LOCALHOST.has(admin)) fail("admin", `must listen on localhost only, not ${JSON.stringify(admin)}`);

  const edge = publicEdge(config);
  if (!edge) {
    fail("listeners", "no HTTP connection manager runs envoy.filters.http.grpc_json_transcoder");
    return problems;
  }
  problems.push(...checkFilterChain(edge.filters));
  problems.push(...checkConnectionManager(edge.hcm));

  const moduleOf = new Map<string, ModuleFacts>();
  for (const m of modules) for (const s of [...m.publicServices, ...m.internalServices]) moduleOf.set(s, m);
  const publicServices = modules.flatMap((m) => m.publicServices).sort();

  // The transcoder: exactly the public services, each present in the descriptor set.
  const transcoder = transcoderOf(config);
  const listed: string[] = [...(transcoder?.services ?? [])].sort();
  if (JSON.stringify(listed) !== JSON.stringify(publicServices)) {
    fail(
      "grpc_json_transcoder.services",
      `must be exactly the public services [${publicServices.join(", ")}], got [${listed.join(", ")}]`,
    );
  }
  for (const s of listed)
    if (!services.has(s))
      fail("grpc_json_transcoder.services", `${s} is not in the descriptor set (Envoy would not start)`);
  problems.push(...checkTranscoderOptions(transcoder));

  // Clusters: unique names, HTTP/2, gRPC health checks of a service the module serves, outlier detection.
  const clusterByName = new Map<string, Node>();
  for (const c of clusters(config)) {
    if (clusterByName.has(c.name)) fail(`cluster ${c.name}`, "defined twice");
    clusterByName.set(c.name, c);
    problems.push(...checkCluster(c, modules));
  }

  // Every route's cluster exists; every route has a timeout but those of untimed calls; only GET
  // routes retry on more than connection failures.
  const untimedRpcs = new Set(modules.flatMap((m) => m.untimedRpcs));
  const vhosts: Node[] = edge.hcm.route_config?.virtual_hosts ?? [];
  if (vhosts.length === 0) fail("route_config", "no virtual host");
  const usedClusters = new Set<string>();
  for (const vh of vhosts) {
    for (const [i, r] of (vh.routes ?? []).entries()) {
      const where = `route ${vh.name}[${i}] (${r.match?.prefix ?? r.match?.path ?? "?"})`;
      const action = r.route;
      if (!action) {
        fail(where, "is not a route to a cluster");
        continue;
      }
      if (typeof action.cluster !== "string") {
        fail(where, "must name one cluster (weighted or header-chosen clusters are not checked here)");
        continue;
      }
      usedClusters.add(action.cluster);
      if (!clusterByName.has(action.cluster))
        fail(where, `routes to cluster "${action.cluster}", which does not exist`);
      // An untimed call (an event stream) has its own route, by exact path, with no timeout.
      const untimed = typeof r.match?.path === "string" && untimedRpcs.has(r.match.path.slice(1));
      if (untimed) {
        if (action.timeout !== "0s") fail(where, "is an untimed call's route: needs timeout 0s");
        if (action.retry_policy !== undefined) fail(where, "is an untimed call's route: must not retry");
      } else if (action.timeout === undefined || action.timeout === "0s")
        fail(where, "needs an explicit, non-zero timeout");
    }
  }
  for (const name of clusterByName.keys())
    if (!usedClusters.has(name)) fail(`cluster ${name}`, "is not used by any route");

  // Every google.api.http binding of a transcoded service reaches the cluster of its module; writes
  // are never retried after reaching a pod.
  for (const name of listed) {
    const service = services.get(name);
    const module = moduleOf.get(name);
    if (!service || !module) continue;
    for (const method of service.methods) {
      for (const b of method.bindings) {
        const where = `${b.verb} ${b.path} (${name}/${method.name})`;
        const route = matchRoute(config, transcodedRequest(name, method.name, b.verb));
        if (!route) {
          fail(where, "matches no route: unreachable through the edge");
          continue;
        }
        const cluster = route.route?.cluster;
        if (cluster !== module.name)
          fail(where, `routes to cluster "${cluster}", not to "${module.name}", the module serving ${name}`);
        const retryOn = String(route.route?.retry_policy?.retry_on ?? "")
          .split(",")
          .map((s) => s.trim())
          .filter((s) => s !== "");
        const unsafe = retryOn.filter((c) => !SAFE_RETRY_ON.has(c));
        if (b.verb !== "GET" && unsafe.length > 0)
          fail(where, `a write is retried on ${unsafe.join(", ")}; only reads may be`);
      }
    }
  }

  // Nothing else is routable: internal services, test-only ones, gRPC health, whatever the
  // descriptor set holds beyond the public services.
  const others = new Set([...services.keys(), ...modules.flatMap((m) => m.internalServices)]);
  for (const s of publicServices) others.delete(s);
  for (const name of others) {
    const methods = services.get(name)?.methods.map((m) => m.name) ?? ["AnyMethod"];
    for (const method of methods) {
      for (const verb of ["GET", "POST"]) {
        const route = matchRoute(config, transcodedRequest(name, method, verb));
        if (route) fail(`${name}/${method}`, `is not public but routes to cluster "${route.route?.cluster}"`);
      }
    }
  }
  return problems;
}

function checkFilterChain(filters: Node[]): string[] {
  const problems: string[] = [];
  const types = filters.map(typeOf);
  const lua = types.indexOf(LUA_TYPE);
  const transcoder = types.indexOf(TRANSCODER_TYPE);
  const router = types.indexOf(ROUTER_TYPE);
  if (lua === -1) problems.push("http_filters: no Lua error mapper");
  else if (lua > transcoder)
    problems.push(
      "http_filters: the Lua filter must come before the transcoder, so that it sees the transcoder's responses",
    );
  if (router !== types.length - 1) problems.push("http_filters: the router must be the last filter");
  const luaConfig = filters[lua]?.typed_config;
  if (luaConfig) {
    const source = luaConfig.default_source_code;
    if (source?.inline_string !== undefined) {
      // Inlined: it must be the mapper the tests run, byte for byte.
      if (source.inline_string !== readFileSync(LUA_MAPPER_PATH, "utf8"))
        problems.push("lua: the inlined script differs from deploy/envoy/error-mapper.lua");
    } else if (typeof source?.filename !== "string" || !source.filename.endsWith("/error-mapper.lua")) {
      problems.push("lua: default_source_code must be error-mapper.lua (by file name, or inlined)");
    }
  }
  return problems;
}

function checkConnectionManager(hcm: Node): string[] {
  const problems: string[] = [];
  if (hcm.generate_request_id === false) problems.push("http_connection_manager: generate_request_id must stay on");
  if (hcm.preserve_external_request_id !== true)
    problems.push(
      "http_connection_manager: preserve_external_request_id must be true (clients' X-Request-Id are kept)",
    );
  if (hcm.always_set_request_id_in_response !== true)
    problems.push("http_connection_manager: always_set_request_id_in_response must be true");
  const jsonLogs = (hcm.access_log ?? []).some((l: Node) => l.typed_config?.log_format?.json_format !== undefined);
  if (!jsonLogs) problems.push("http_connection_manager: no JSON access log");
  for (const m of hcm.local_reply_config?.mappers ?? []) {
    const status = m.filter?.status_code_filter?.comparison?.value?.default_value;
    const title = m.body_format_override?.json_format?.title;
    if (typeof status === "number" && title !== reasonPhrase(status)) {
      problems.push(
        `local_reply_config: the title for ${status} must be "${reasonPhrase(status)}", as the TypeScript edge writes it, not "${title}"`,
      );
    }
  }
  return problems;
}

function checkTranscoderOptions(t: Node): string[] {
  if (!t) return ["grpc_json_transcoder: missing"];
  const problems: string[] = [];
  const want = (cond: boolean, what: string) => cond || problems.push(`grpc_json_transcoder: ${what}`);
  want(t.convert_grpc_status === true, "convert_grpc_status must be true");
  want(
    t.request_validation_options?.reject_unknown_method === true,
    "request_validation_options.reject_unknown_method must be true",
  );
  want(
    t.request_validation_options?.reject_unknown_query_parameters === true,
    "request_validation_options.reject_unknown_query_parameters must be true",
  );
  want(
    t.request_validation_options?.reject_binding_body_field_collisions === true,
    "request_validation_options.reject_binding_body_field_collisions must be true (a body field may not override a path value)",
  );
  want(
    t.print_options?.always_print_primitive_fields === true,
    "print_options.always_print_primitive_fields must be true",
  );
  want(
    t.print_options?.preserve_proto_field_names !== true,
    "JSON names, not proto names (preserve_proto_field_names off)",
  );
  want(t.print_options?.always_print_enums_as_ints !== true, "enums print as names");
  want(t.print_options?.add_whitespace !== true, "compact JSON (add_whitespace off)");
  want(
    t.url_unescape_spec === "ALL_CHARACTERS_EXCEPT_SLASH",
    "url_unescape_spec must be ALL_CHARACTERS_EXCEPT_SLASH (as the TypeScript edge decodes path variables)",
  );
  want(t.query_param_unescape_plus !== true, "'+' in a query value must stay '+'");
  want(
    t.ignore_unknown_query_parameters !== true && !(t.ignored_query_parameters?.length > 0),
    "no query parameter may be ignored",
  );
  want(t.match_incoming_request_route !== true, "routes match the transcoded gRPC path");
  want(
    typeof t.proto_descriptor === "string",
    "proto_descriptor must name the descriptor file mounted from the ConfigMap",
  );
  return problems;
}

function checkCluster(c: Node, modules: readonly ModuleFacts[]): string[] {
  const problems: string[] = [];
  const where = `cluster ${c.name}`;
  const fail = (what: string) => problems.push(`${where}: ${what}`);
  const module = modules.find((m) => m.name === c.name);
  if (!module) fail(`is named after no service module (${modules.map((m) => m.name).join(", ")})`);
  const h2 = c.typed_extension_protocol_options?.[H2_OPTIONS_KEY]?.explicit_http_config?.http2_protocol_options;
  if (h2 === undefined) fail("must speak HTTP/2 to the pods (explicit_http_config.http2_protocol_options)");
  if (c.type !== "STRICT_DNS") fail("must be STRICT_DNS over the headless Service, so each pod is an endpoint");
  if (!c.connect_timeout) fail("needs a connect_timeout");
  if (!c.outlier_detection) fail("needs outlier_detection");
  const checks: Node[] = c.health_checks ?? [];
  if (checks.length === 0) fail("needs a gRPC health check");
  for (const hc of checks) {
    const name = hc.grpc_health_check?.service_name;
    if (hc.grpc_health_check === undefined) fail("health checks must be grpc.health.v1 checks");
    else if (
      module &&
      name !== undefined &&
      name !== "" &&
      !module.publicServices.includes(name) &&
      !module.internalServices.includes(name)
    ) {
      fail(`health-checks ${name}, which module ${module.name} does not serve (the check would fail)`);
    }
  }
  if (clusterEndpointsOf(c).length === 0) fail("has no endpoint");
  return problems;
}

function clusterEndpointsOf(c: Node): Node[] {
  return (c.load_assignment?.endpoints ?? []).flatMap((g: Node) => g.lb_endpoints ?? []);
}
