// The fuzzer's and the isolation matrix's endpoint list is the docs/interface.md §4 surface the edge serves:
// the same method and path for every route of every public service, and each endpoint fuzzed by
// one of the fuzz files. A new route that is not added there fails here. Likewise the RPC
// fuzzer's service list (support/rpc-catalog.ts) is every service the modules serve on the gRPC
// port, with its access policy, plus the health service; fuzz-rpc.test.ts checks the same
// against the running server.
import { describe, expect, it } from "vitest";
import { buildRouteTable } from "../../services/edge/routes.js";
import { isPublic } from "../../services/platform/module.js";
import { ALL_MODULES } from "../../services/modules.js";
import { endpoints, id, NO_FRESH_RESOURCES } from "./support/endpoints.js";
import { FUZZ_GROUPS } from "./support/fuzz-groups.js";
import { RPC_METHODS, RPC_SERVICES } from "./support/rpc-catalog.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import type { Org } from "./support/world.js";

const placeholder = new Proxy(
  {},
  {
    get: (_t, p) =>
      p === "members" || p === "sessions" || p === "messages"
        ? new Proxy({}, { get: () => ({ userId: "u", email: "e@x.test" }) })
        : { id: "x", name: "x", repoId: "x" },
  },
) as unknown as Org;
const shape = (key: string) => key.replace(/\{[^}]+\}/g, "{}");

describe("endpoint catalog", () => {
  const catalog = endpoints(placeholder, {
    fuzzComputer: { id: "x" },
    ...NO_FRESH_RESOURCES,
    busyComputer: { id: "x" },
    webhook: { id: "x" },
  });

  it("names exactly the routes of the public services", () => {
    // The API's routes: the pages (the web module's open GET /, /assets/*, /openapi.json, /docs)
    // answer files to anyone, and are tested as such (test/web.test.ts, test/openapi-docs.test.ts);
    // their gRPC methods are fuzzed with the rest (RPC_SERVICES).
    const routes = buildRouteTable(
      ALL_MODULES.flatMap((m) =>
        m.services.filter((s) => isPublic(s) && s.policy.kind !== "open").map((s) => s.service),
      ),
    ).routes;
    const served = routes.map((r) => shape(`${r.httpMethod} ${r.template.source}`)).sort();
    expect(catalog.map((e) => shape(id(e))).sort()).toEqual(served);
    expect(served).toHaveLength(36);
  });

  it("is fuzzed endpoint by endpoint", () => {
    const fuzzed = Object.values(FUZZ_GROUPS).flat().sort();
    expect(fuzzed).toEqual(catalog.map(id).sort());
  });

  it("the RPC fuzzer covers every service of every module, with its access, and the health service", () => {
    // All but the web module's pages (rpc-catalog.ts says why).
    const served = ALL_MODULES.filter((m) => m.name !== "web").flatMap((m) =>
      m.services.map((s) => `${s.service.typeName} ${s.policy.kind}`),
    );
    served.push(`${Health.typeName} open`);
    expect(RPC_SERVICES.map((s) => `${s.service.typeName} ${s.access}`).sort()).toEqual(served.sort());
    // 47, then GetCode and GetCosts, then StreamTools, StreamActivity, StreamProductivity,
    // StreamCode and StreamCosts (issue 21), then the six OTLP methods
    // (OtlpHttpService's three and the OpenTelemetry collector services' Export).
    expect(RPC_METHODS).toHaveLength(60);
  });
});
