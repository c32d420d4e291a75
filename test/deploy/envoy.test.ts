// envoy.yaml, verified without an Envoy binary: parsed strictly as an
// envoy.config.bootstrap.v3.Bootstrap with Envoy's API protos (envoy-proto.ts), then checked
// against the descriptor set and the service modules (envoy-config.ts). Each check is also shown
// failing on a deliberately broken copy.
import { fromBinary, toBinary, type DescFile } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { beforeAll, describe, expect, it } from "vitest";
import { file_agentplane_edgetest_v1_edgetest } from "../../gen/agentplane/edgetest/v1/edgetest_pb.js";
import { describedFiles, describeServices, readDescriptor, type DescribedService } from "./descriptor.js";
import {
  checkEnvoyCrossReferences,
  clusterEndpoints,
  matchRoute,
  parseEnvoyYaml,
  publicEdge,
  readEnvoyYaml,
  transcodedRequest,
  transcoderOf,
} from "./envoy-config.js";
import { checkEnvoyConfig } from "./envoy-proto.js";
import { serviceModules, type ModuleFacts } from "./service-modules.js";
import { COMPRESSOR_CONTENT_TYPES, COMPRESSOR_MIN_CONTENT_LENGTH } from "../../services/platform/compressor.js";
import { HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS } from "../../services/edge/http-server.js";
import { DEFAULT_EDGE_MAX_CONNECTIONS } from "../../services/platform/config.js";
import { loadConfig } from "../../services/config.js";
import { DRAIN_TIMEOUT_MS, MAX_REQUEST_BODY_BYTES } from "../../services/server.js";
import { ALL_MODULES } from "../../services/modules.js";
import { isPublic, untimedRpcs } from "../../services/platform/module.js";
import {
  CORS_ALLOWED_HEADERS,
  CORS_ALLOWED_METHODS,
  CORS_EXPOSED_HEADERS,
  CORS_MAX_AGE_SECONDS,
} from "../../services/platform/cors.js";
import { PUBLIC_SERVICES } from "../../clients/typescript/src/services.js";

/** The calls both edges give no timeout: the event streams. */
const UNTIMED = untimedRpcs(ALL_MODULES.flatMap((m) => m.services.filter(isPublic)));

const text = readEnvoyYaml();
let services: Map<string, DescribedService>;
let modules: ModuleFacts[];

beforeAll(() => {
  services = describeServices(readDescriptor());
  modules = serviceModules();
});

/** envoy.yaml with one textual change; the original must contain what is replaced. */
function brokenCopy(from: string, to: string): string {
  expect(text).toContain(from);
  return text.replace(from, to);
}

/** A parsed envoy.yaml, walked as plain JSON. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Config = any;

function brokenConfig(change: (config: Config) => void): unknown {
  const config = parseEnvoyYaml(text);
  change(config);
  return config;
}

describe("envoy.yaml parses strictly as Envoy's Bootstrap", () => {
  it("has no unknown field, wrong type, unknown enum value, unresolved @type or deprecated field", () => {
    const { errors, root } = checkEnvoyConfig(parseEnvoyYaml(text));
    expect(errors).toEqual([]);
    // Every typed_config was resolved against a real message type.
    const urls = [...text.matchAll(/"@type": type\.googleapis\.com\/([\w.]+)/g)].map((m) => m[1]!);
    expect(urls.length).toBeGreaterThanOrEqual(8);
    for (const name of new Set(urls)) expect(root.lookupType(name).fullName).toBe(`.${name}`);
  });

  it.each([
    [
      "a misspelled field",
      "connect_timeout: 2s",
      "conect_timeout: 2s",
      /clusters\[0\]\.conect_timeout: unknown field "conect_timeout" in envoy\.config\.cluster\.v3\.Cluster/,
    ],
    [
      "a misspelled field inside a typed_config",
      "convert_grpc_status: true",
      "convert_grpc_statuses: true",
      /unknown field "convert_grpc_statuses" in envoy\.extensions\.filters\.http\.grpc_json_transcoder\.v3\.GrpcJsonTranscoder/,
    ],
    [
      "an unknown enum value",
      "url_unescape_spec: ALL_CHARACTERS_EXCEPT_SLASH",
      "url_unescape_spec: ALL_BUT_SLASH",
      /unknown value "ALL_BUT_SLASH" of enum/,
    ],
    [
      "a typed_config of an unknown type",
      "v3.UuidRequestIdConfig",
      "v3.UuidRequestIdConfg",
      /unknown type type\.googleapis\.com\/envoy\.extensions\.request_id\.uuid\.v3\.UuidRequestIdConfg/,
    ],
    ["a value of the wrong type", "port_value: 8080", "port_value: http", /port_value: expected an integer/],
    [
      "a malformed duration",
      "connect_timeout: 2s",
      "connect_timeout: 2 seconds",
      /connect_timeout: expected a duration/,
    ],
    [
      "a deprecated field",
      "default_source_code:\n",
      'inline_code: "function envoy_on_request() end"\n              default_source_code:\n',
      /deprecated field inline_code of envoy\.extensions\.filters\.http\.lua\.v3\.Lua/,
    ],
    [
      "two members of one oneof",
      "proto_descriptor: /etc/envoy/api.binpb",
      "proto_descriptor: /etc/envoy/api.binpb\n              proto_descriptor_bin: AAAA",
      /oneof descriptor_set of .*GrpcJsonTranscoder has more than one member/,
    ],
    [
      "a broken validation rule (zero health-check timeout)",
      "{ timeout: 1s, interval: 5s",
      "{ timeout: 0s, interval: 5s",
      /health_checks\[0\]\.timeout: must be longer than 0s/,
    ],
    [
      "a connection limit of 0",
      "max_active_downstream_connections: 1024",
      "max_active_downstream_connections: 0",
      /overload_manager\.resource_monitors\[0\]\.typed_config\.max_active_downstream_connections: must be > 0/,
    ],
    [
      "a misspelled connection-manager timeout",
      "request_timeout: 30s",
      "request_timout: 30s",
      /unknown field "request_timout" in envoy\.extensions\.filters\.network\.http_connection_manager\.v3\.HttpConnectionManager/,
    ],
  ])("rejects a broken copy with %s", (_name, from, to, expected) => {
    const { errors } = checkEnvoyConfig(parseEnvoyYaml(brokenCopy(from, to)));
    expect(errors).toContainEqual(expect.stringMatching(expected));
  });

  it("rejects a duplicate key, as Envoy's YAML loader does", () => {
    expect(() =>
      parseEnvoyYaml(brokenCopy("    connect_timeout: 2s\n", "    connect_timeout: 2s\n    connect_timeout: 3s\n")),
    ).toThrow(/unique/i);
  });
});

describe("the descriptor set Envoy loads (deploy/envoy/api.binpb)", () => {
  /** What of the test-only edgetest proto a descriptor set holds: its files and its services. */
  function testOnlyParts(bytes: Uint8Array): string[] {
    const files = describedFiles(bytes).filter((f) => f.startsWith("agentplane/edgetest/"));
    return [...files, ...[...describeServices(bytes).keys()].filter((name) => name.startsWith("agentplane.edgetest."))];
  }

  it("holds every service of the modules but nothing of the test-only edgetest proto", () => {
    expect(describedFiles(readDescriptor())).toContain("agentplane/sessions/v1alpha1/sessions.proto");
    expect(testOnlyParts(readDescriptor())).toEqual([]);
    for (const name of modules.flatMap((m) => [...m.publicServices, ...m.internalServices])) {
      expect(services.has(name), name).toBe(true);
    }
  });

  it("would show the edgetest proto had it been built in", () => {
    const set = fromBinary(FileDescriptorSetSchema, readDescriptor());
    const add = (file: DescFile): void => {
      for (const dep of file.dependencies) add(dep);
      if (!set.file.some((f) => f.name === file.proto.name)) set.file.push(file.proto);
    };
    add(file_agentplane_edgetest_v1_edgetest);
    expect(testOnlyParts(toBinary(FileDescriptorSetSchema, set))).toEqual([
      "agentplane/edgetest/v1/edgetest.proto",
      "agentplane.edgetest.v1.EdgeTestService",
    ]);
  });
});

describe("envoy.yaml cross-references", () => {
  it("are consistent: clusters, transcoder services, every REST path reachable, internal services not routable", () => {
    expect(checkEnvoyCrossReferences(parseEnvoyYaml(text), services, modules)).toEqual([]);
  });

  it("limits request bodies exactly as the TypeScript edge does", () => {
    expect(transcoderOf(parseEnvoyYaml(text)).max_request_body_size).toBe(MAX_REQUEST_BODY_BYTES);
  });

  it("bounds connections and requests as the TypeScript edge does", () => {
    const config = parseEnvoyYaml(text);
    const hcm = publicEdge(config)!.hcm;
    const seconds = (d: string) => Number(/^(\d+(?:\.\d+)?)s$/.exec(d)?.[1]);
    // Headers, then the whole request (408 past either), then the call from the complete request.
    expect(seconds(hcm.request_headers_timeout) * 1000).toBe(HEADERS_TIMEOUT_MS);
    expect(seconds(hcm.request_timeout) * 1000).toBe(loadConfig({}).requestTimeoutMs);
    // Every route but those of the untimed calls (event streams), which have none, as in the
    // TypeScript edge (services/edge/edge.ts).
    for (const r of routesOf(config)) {
      const untimed = r.match.path !== undefined && UNTIMED.has(r.match.path.slice(1));
      expect(seconds(r.route.timeout) * 1000, JSON.stringify(r.match)).toBe(
        untimed ? 0 : loadConfig({}).requestTimeoutMs,
      );
    }
    expect(routesOf(config).filter((r) => seconds(r.route.timeout) === 0)).toHaveLength(UNTIMED.size);
    expect(seconds(hcm.common_http_protocol_options.idle_timeout) * 1000).toBe(KEEP_ALIVE_TIMEOUT_MS);
    // The HTTP/2 drain grace fits in the drain.
    expect(seconds(hcm.drain_timeout) * 1000).toBeGreaterThan(0);
    expect(seconds(hcm.drain_timeout) * 1000).toBeLessThan(DRAIN_TIMEOUT_MS);
    // One connection limit, EDGE_MAX_CONNECTIONS' default, on the public listener only.
    const monitors = config.overload_manager.resource_monitors;
    expect(monitors).toEqual([
      {
        name: "envoy.resource_monitors.global_downstream_max_connections",
        typed_config: {
          "@type":
            "type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig",
          max_active_downstream_connections: DEFAULT_EDGE_MAX_CONNECTIONS,
        },
      },
    ]);
    const listeners: Config[] = config.static_resources.listeners;
    expect(listeners.find((l) => l.name === "public_http").ignore_global_conn_limit).toBeUndefined();
    expect(listeners.find((l) => l.name === "health").ignore_global_conn_limit).toBe(true);
    expect(config.admin.ignore_global_conn_limit).toBe(true);
  });

  it("compresses unary answers as the TypeScript edge does (services/platform/compressor.ts)", () => {
    const filters: Config[] = publicEdge(parseEnvoyYaml(text))!.hcm.http_filters;
    const compressors = filters.filter((f) => f.name === "envoy.filters.http.compressor");
    expect(compressors).toHaveLength(1);
    const c = compressors[0].typed_config;
    expect(c.response_direction_config.common_config.min_content_length).toBe(COMPRESSOR_MIN_CONTENT_LENGTH);
    expect(c.response_direction_config.common_config.content_type).toEqual(COMPRESSOR_CONTENT_TYPES);
    expect(c.compressor_library.typed_config["@type"]).toBe(
      "type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip",
    );
    expect(c.compressor_library.typed_config.compression_level).toBe("BEST_SPEED");
    // Defaults the edge relies on: compression on, ETags weakened rather than compression off,
    // Accept-Encoding still sent upstream (the HttpBody routes negotiate their own coding).
    expect(c.response_direction_config.common_config.enabled).toBeUndefined();
    expect(c.response_direction_config.disable_on_etag_header).toBeUndefined();
    expect(c.response_direction_config.remove_accept_encoding_header).toBeUndefined();
    // First in the chain: on the response path it runs last, after the Lua error mapper.
    expect(filters[0]!.name).toBe("envoy.filters.http.compressor");
  });

  it("transcodes exactly the public services of the service modules (the five areas, the OTLP receiver, the pages)", () => {
    const listed = [...transcoderOf(parseEnvoyYaml(text)).services].sort();
    expect(listed).toEqual(modules.flatMap((m) => m.publicServices).sort());
    expect(listed).toEqual([
      "agentplane.analytics.v1.AnalyticsService",
      "agentplane.analytics.v1.OtlpHttpService",
      "agentplane.computers.v1alpha1.ComputerService",
      "agentplane.organization.v1alpha1.OrganizationService",
      "agentplane.readiness.v1.ReadinessService",
      "agentplane.sessions.v1alpha1.SessionService",
      "agentplane.web.v1.WebService",
      "opentelemetry.proto.collector.logs.v1.LogsService",
      "opentelemetry.proto.collector.metrics.v1.MetricsService",
      "opentelemetry.proto.collector.trace.v1.TraceService",
    ]);
  });

  it("routes every google.api.http binding of those services to its module, retrying only reads", () => {
    const config = parseEnvoyYaml(text);
    let bindings = 0;
    for (const m of modules) {
      for (const name of m.publicServices) {
        const service = services.get(name)!;
        for (const method of service.methods) {
          for (const b of method.bindings) {
            bindings++;
            const route = matchRoute(config, transcodedRequest(name, method.name, b.verb));
            expect(route?.route.cluster, `${b.verb} ${b.path}`).toBe(m.name);
            const retryOn: string = route.route.retry_policy?.retry_on ?? "";
            if (UNTIMED.has(`${name}/${method.name}`)) expect(route.route.retry_policy).toBeUndefined();
            else if (b.verb === "GET") expect(retryOn).toContain("unavailable");
            else expect(retryOn.split(",").every((c) => ["connect-failure", "refused-stream"].includes(c))).toBe(true);
          }
        }
      }
    }
    // Every public service has REST bindings; the descriptor set is not empty of them.
    expect(bindings).toBeGreaterThanOrEqual(modules.length);
  });

  it("gives internal, test-only, health and reflection services no route, whatever the verb", () => {
    const config = parseEnvoyYaml(text);
    const internal = modules.flatMap((m) => m.internalServices);
    expect(internal).toContain("agentplane.sessions.v1alpha1.SessionRunnerService");
    for (const name of [
      ...internal,
      "agentplane.edgetest.v1.EdgeTestService",
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
    ]) {
      for (const verb of ["GET", "POST", "DELETE"])
        expect(matchRoute(config, transcodedRequest(name, "Anything", verb))).toBeUndefined();
    }
  });

  it("names one HTTP/2 cluster per module, each at the module's Service on the gRPC port", () => {
    const endpoints = clusterEndpoints(parseEnvoyYaml(text));
    expect(endpoints.map((e) => e.cluster).sort()).toEqual(modules.map((m) => m.name).sort());
    for (const e of endpoints) expect(e).toEqual({ cluster: e.cluster, address: e.cluster, port: 8081 });
    expect(publicEdge(parseEnvoyYaml(text))?.port).toBe(8080);
  });

  it.each([
    [
      "a route to a missing cluster",
      (c: Config) => {
        routesOf(c)[5].route.cluster = "sesions";
      },
      /routes to cluster "sesions", which does not exist/,
    ],
    [
      "an internal service in the transcoder",
      (c: Config) => {
        transcoderOf(c).services.push("agentplane.sessions.v1alpha1.SessionRunnerService");
      },
      /must be exactly the public services/,
    ],
    [
      "a public service missing from the transcoder",
      (c: Config) => {
        transcoderOf(c).services.splice(1, 1);
      },
      /must be exactly the public services/,
    ],
    [
      "a service the descriptor set lacks",
      (c: Config) => {
        transcoderOf(c).services.push("agentplane.nothing.v1.NoService");
      },
      /agentplane\.nothing\.v1\.NoService is not in the descriptor set/,
    ],
    [
      "a route for an internal service",
      (c: Config) => {
        routesOf(c).push({
          match: { prefix: "/agentplane.sessions.v1alpha1.SessionRunnerService/" },
          route: { cluster: "sessions", timeout: "30s" },
        });
      },
      /SessionRunnerService\/\w+: is not public but routes to cluster "sessions"/,
    ],
    [
      "a catch-all route",
      (c: Config) => {
        routesOf(c).push({ match: { prefix: "/" }, route: { cluster: "sessions", timeout: "30s" } });
      },
      /is not public but routes/,
    ],
    [
      "a mistyped route prefix",
      (c: Config) => {
        for (const r of routesOf(c))
          if (r.match.prefix !== undefined)
            r.match.prefix = r.match.prefix.replace("SessionService", "SessionsService");
      },
      /\(agentplane\.sessions\.v1alpha1\.SessionService\/\w+\): matches no route/,
    ],
    [
      "a route to another module's cluster",
      (c: Config) => {
        for (const r of routesOf(c)) if (r.route.cluster === "readiness") r.route.cluster = "analytics";
      },
      /routes to cluster "analytics", not to "readiness"/,
    ],
    [
      "writes retried on 5xx",
      (c: Config) => {
        routesOf(c).find(
          (r) => r.route.cluster === "sessions" && r.match.prefix !== undefined && r.match.headers === undefined,
        )!.route.retry_policy = {
          retry_on: "5xx,connect-failure",
          num_retries: 2,
        };
      },
      /a write is retried on 5xx/,
    ],
    [
      "the Lua filter after the transcoder",
      (c: Config) => {
        const f = publicEdge(c)!.filters;
        const lua = f.findIndex((x: Config) => x.name === "envoy.filters.http.lua");
        const transcoder = f.findIndex((x: Config) => x.name === "envoy.filters.http.grpc_json_transcoder");
        [f[lua], f[transcoder]] = [f[transcoder], f[lua]];
      },
      /the Lua filter must come before the transcoder/,
    ],
    [
      "an admin listener on every interface",
      (c: Config) => {
        c.admin.address.socket_address.address = "0.0.0.0";
      },
      /admin: must listen on localhost only/,
    ],
    [
      "HTTP/1.1 to the pods",
      (c: Config) => {
        c.static_resources.clusters[2].typed_extension_protocol_options = undefined;
      },
      /cluster sessions: must speak HTTP\/2/,
    ],
    [
      "a health check of a service the module does not serve",
      (c: Config) => {
        c.static_resources.clusters[0].health_checks[0].grpc_health_check.service_name =
          "agentplane.sessions.v1alpha1.SessionService";
      },
      /cluster analytics: health-checks agentplane\.sessions\.v1alpha1\.SessionService/,
    ],
    [
      "proto field names in the JSON",
      (c: Config) => {
        transcoderOf(c).print_options.preserve_proto_field_names = true;
      },
      /JSON names, not proto names/,
    ],
    [
      "unknown query parameters let through",
      (c: Config) => {
        transcoderOf(c).request_validation_options.reject_unknown_query_parameters = false;
      },
      /reject_unknown_query_parameters must be true/,
    ],
    [
      "a body field overriding a path value",
      (c: Config) => {
        delete transcoderOf(c).request_validation_options.reject_binding_body_field_collisions;
      },
      /reject_binding_body_field_collisions must be true/,
    ],
    [
      "a local reply title that differs from the TypeScript edge",
      (c: Config) => {
        publicEdge(c)!.hcm.local_reply_config.mappers[0].body_format_override.json_format.title = "Bad request";
      },
      /the title for 400 must be "Bad Request"/,
    ],
  ])("fail on a broken copy with %s", (_name, change, expected) => {
    expect(checkEnvoyCrossReferences(brokenConfig(change), services, modules)).toContainEqual(
      expect.stringMatching(expected),
    );
  });
});

function routesOf(config: Config): Config[] {
  return publicEdge(config)!.hcm.route_config.virtual_hosts[0].routes;
}

// The public gRPC listener: gRPC, gRPC-Web and Connect for browsers and @agentplane/client, with
// CORS. Its routes are matched on the gRPC path itself (no transcoder).

/** The connection manager of the listener that runs envoy.filters.http.grpc_web. */
function grpcWebEdge(config: Config): Config | undefined {
  for (const l of config?.static_resources?.listeners ?? [])
    for (const chain of l.filter_chains ?? [])
      for (const f of chain.filters ?? []) {
        const hcm = f.typed_config;
        if ((hcm?.http_filters ?? []).some((h: Config) => h.name === "envoy.filters.http.grpc_web"))
          return { listener: l, hcm };
      }
  return undefined;
}

/** The first route of that listener matching a gRPC path, as Envoy's router picks it. */
function matchGrpcRoute(config: Config, path: string): Config | undefined {
  const routes: Config[] = grpcWebEdge(config)?.hcm.route_config.virtual_hosts[0].routes ?? [];
  return routes.find((r) => (r.match.path !== undefined ? r.match.path === path : path.startsWith(r.match.prefix)));
}

/** The calls that last until the client leaves: the REST event stream and its typed twin. */
const EVENT_STREAMS = new Set([...UNTIMED, "agentplane.sessions.v1alpha1.SessionService/WatchSessionEvents"]);

/** What is wrong with the public gRPC listener, in words; [] when nothing. */
function checkGrpcWebListener(config: Config, modules: readonly ModuleFacts[]): string[] {
  const problems: string[] = [];
  const edge = grpcWebEdge(config);
  if (!edge) return ["no listener runs envoy.filters.http.grpc_web"];
  const names = edge.hcm.http_filters.map((f: Config) => f.name);
  if (
    JSON.stringify(names) !==
    JSON.stringify(["envoy.filters.http.cors", "envoy.filters.http.grpc_web", "envoy.filters.http.router"])
  )
    problems.push(`filters must be cors, grpc_web, router in that order, got ${names.join(", ")}`);
  if (edge.hcm.use_remote_address !== true)
    problems.push("use_remote_address must be true (the services' failure limits)");
  const vhosts: Config[] = edge.hcm.route_config?.virtual_hosts ?? [];
  const policy = vhosts[0]?.typed_per_filter_config?.["envoy.filters.http.cors"];
  if (vhosts.length !== 1 || !policy) return [...problems, "one virtual host with a CORS policy is expected"];
  // The same policy as the services' CORS (services/platform/cors.ts).
  if (policy.allow_methods !== CORS_ALLOWED_METHODS.join(", ")) problems.push("allow_methods differ from cors.ts");
  if (policy.allow_headers !== CORS_ALLOWED_HEADERS.join(", ")) problems.push("allow_headers differ from cors.ts");
  if (policy.expose_headers !== CORS_EXPOSED_HEADERS.join(", ")) problems.push("expose_headers differ from cors.ts");
  if (policy.max_age !== String(CORS_MAX_AGE_SECONDS)) problems.push("max_age differs from cors.ts");
  if (policy.forward_not_matching_preflights !== false)
    problems.push("forward_not_matching_preflights must be false: another origin's preflight is answered without CORS");
  // Origins matched exactly, each one CORS_ALLOWED_ORIGINS would take as it is.
  const matchers: Config[] = policy.allow_origin_string_match ?? [];
  if (matchers.length === 0) problems.push("allow_origin_string_match names no origin");
  for (const m of matchers) {
    if (Object.keys(m).join() !== "exact") {
      problems.push(`origins must be matched exactly, got ${JSON.stringify(m)}`);
      continue;
    }
    try {
      if (loadConfig({ CORS_ALLOWED_ORIGINS: m.exact }).corsAllowedOrigins[0] !== m.exact) throw new Error();
    } catch {
      problems.push(`origin ${JSON.stringify(m.exact)} is not one CORS_ALLOWED_ORIGINS would take`);
    }
  }
  // Every method the client reaches, to its module's cluster; only never-delivered calls retried;
  // the event streams untimed, everything else timed as the REST routes are.
  const moduleOf = new Map(modules.flatMap((m) => m.publicServices.map((s) => [s, m.name] as const)));
  for (const service of Object.values(PUBLIC_SERVICES)) {
    for (const method of service.methods) {
      const rpc = `${service.typeName}/${method.name}`;
      const route = matchGrpcRoute(config, `/${rpc}`);
      if (!route) {
        problems.push(`${rpc}: matches no route`);
        continue;
      }
      if (route.route.cluster !== moduleOf.get(service.typeName))
        problems.push(`${rpc}: routes to cluster "${route.route.cluster}", not "${moduleOf.get(service.typeName)}"`);
      const retryOn = String(route.route.retry_policy?.retry_on ?? "")
        .split(",")
        .filter((c) => c !== "");
      if (retryOn.some((c) => !["connect-failure", "refused-stream"].includes(c)))
        problems.push(`${rpc}: retried on ${retryOn.join(",")}; a call here may be a write`);
      const timeout = route.route.timeout;
      if (EVENT_STREAMS.has(rpc) ? timeout !== "0s" || route.route.retry_policy : timeout !== "30s")
        problems.push(`${rpc}: timeout ${timeout}${EVENT_STREAMS.has(rpc) ? " (an event stream: 0s, no retry)" : ""}`);
    }
  }
  // Nothing else: internal services, the OTLP receivers, health, the test-only service.
  const others = [
    ...modules.flatMap((m) => [...m.internalServices, ...m.publicServices]),
    "grpc.health.v1.Health",
    "agentplane.edgetest.v1.EdgeTestService",
  ].filter((s) => !Object.values(PUBLIC_SERVICES).some((p) => p.typeName === s));
  for (const s of others) if (matchGrpcRoute(config, `/${s}/Anything`)) problems.push(`${s}: must have no route here`);
  return problems;
}

describe("envoy.yaml's public gRPC listener (gRPC-Web, Connect and CORS for browsers)", () => {
  it("speaks gRPC-Web with the services' CORS policy and routes exactly the client's services", () => {
    const config = parseEnvoyYaml(text);
    expect(checkGrpcWebListener(config, modules)).toEqual([]);
    // The services' own port number, beside the REST edge's 8080.
    expect(grpcWebEdge(config).listener.address.socket_address.port_value).toBe(8081);
    // The five areas' services, the OTLP receivers aside (a module serving pages, not RPCs, neither).
    expect(
      Object.values(PUBLIC_SERVICES)
        .map((s) => s.typeName)
        .sort(),
    ).toEqual(
      modules
        .filter((m) => ["analytics", "readiness", "sessions", "computers", "organization"].includes(m.name))
        .flatMap((m) => m.publicServices)
        .filter((s) => s.startsWith("agentplane.") && s !== "agentplane.analytics.v1.OtlpHttpService")
        .sort(),
    );
  });

  it.each([
    [
      "the grpc_web filter gone",
      (c: Config) => {
        const f: Config[] = grpcWebEdge(c).hcm.http_filters;
        f.splice(
          f.findIndex((x) => x.name === "envoy.filters.http.grpc_web"),
          1,
        );
      },
      /no listener runs envoy\.filters\.http\.grpc_web/,
    ],
    [
      "CORS after gRPC-Web",
      (c: Config) => {
        const f: Config[] = grpcWebEdge(c).hcm.http_filters;
        [f[0], f[1]] = [f[1], f[0]];
      },
      /filters must be cors, grpc_web, router in that order/,
    ],
    [
      "every origin allowed",
      (c: Config) => {
        grpcWebEdge(c).hcm.route_config.virtual_hosts[0].typed_per_filter_config[
          "envoy.filters.http.cors"
        ].allow_origin_string_match = [{ prefix: "" }];
      },
      /origins must be matched exactly/,
    ],
    [
      "an origin with a path",
      (c: Config) => {
        grpcWebEdge(c).hcm.route_config.virtual_hosts[0].typed_per_filter_config[
          "envoy.filters.http.cors"
        ].allow_origin_string_match = [{ exact: "https://app.example.com/" }];
      },
      /is not one CORS_ALLOWED_ORIGINS would take/,
    ],
    [
      "a header list that differs from cors.ts",
      (c: Config) => {
        grpcWebEdge(c).hcm.route_config.virtual_hosts[0].typed_per_filter_config[
          "envoy.filters.http.cors"
        ].allow_headers = "Content-Type";
      },
      /allow_headers differ from cors\.ts/,
    ],
    [
      "other origins' preflights forwarded",
      (c: Config) => {
        delete grpcWebEdge(c).hcm.route_config.virtual_hosts[0].typed_per_filter_config["envoy.filters.http.cors"]
          .forward_not_matching_preflights;
      },
      /forward_not_matching_preflights must be false/,
    ],
    [
      "an internal service routed",
      (c: Config) => {
        grpcWebEdge(c).hcm.route_config.virtual_hosts[0].routes.push({
          match: { prefix: "/agentplane.sessions.v1alpha1.SessionRunnerService/" },
          route: { cluster: "sessions", timeout: "30s" },
        });
      },
      /SessionRunnerService: must have no route here/,
    ],
    [
      "reads retried on unavailable (a call here may be a write)",
      (c: Config) => {
        for (const r of grpcWebEdge(c).hcm.route_config.virtual_hosts[0].routes)
          if (r.route.cluster === "computers")
            r.route.retry_policy = { retry_on: "unavailable,connect-failure", num_retries: 2 };
      },
      /ComputerService\/\w+: retried on unavailable,connect-failure/,
    ],
    [
      "the typed event stream timed",
      (c: Config) => {
        for (const r of grpcWebEdge(c).hcm.route_config.virtual_hosts[0].routes)
          if (r.match.path?.endsWith("/WatchSessionEvents")) r.route.timeout = "30s";
      },
      /WatchSessionEvents: timeout 30s \(an event stream/,
    ],
  ])("fails on a broken copy with %s", (_name, change, expected) => {
    expect(checkGrpcWebListener(brokenConfig(change), modules)).toContainEqual(expect.stringMatching(expected));
  });
});
