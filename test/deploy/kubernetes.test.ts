// deploy/, verified without a cluster: each overlay is rendered (kustomize.ts — no kustomize
// implementation is published on npm, so the test composes the kustomizations itself;
// kustomize-real.test.ts compares it with `kubectl kustomize` where kubectl is installed), every
// object is validated against the Kubernetes API schemas (kubernetes-models, plus unknown fields
// from the same models' type declarations), and the cross-references are checked
// (k8s-crossrefs.ts), NetworkPolicies included (k8s-network.ts models whom they admit). Broken
// copies of deploy/ show each check failing.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDescriptor } from "./descriptor.js";
import { ENVOY_YAML_PATH, LUA_MAPPER_PATH, readEnvoyYaml } from "./envoy-config.js";
import YAML from "yaml";
import { checkHardening, checkKubernetesCrossReferences, type RepositoryFiles } from "./k8s-crossrefs.js";
import { admits, namespaceLabels, podOf, podSource, type Source } from "./k8s-network.js";
import { schemaErrors, unknownFieldErrors } from "./k8s-schema.js";
import { kustomizeBuild, KustomizeError, type K8sObject, type RenderOptions } from "./kustomize.js";
import { serviceModules, type ModuleFacts } from "./service-modules.js";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const OVERLAYS = ["local", "production"] as const;

let modules: ModuleFacts[];
let repo: RepositoryFiles;
const rendered = new Map<string, K8sObject[]>();

/** Render options for a repository checkout at `root`: the production secrets from the committed example. */
function renderOptions(root: string): RenderOptions {
  const production = path.join(root, "deploy/overlays/production");
  return {
    files: new Map([
      [path.join(production, "secrets.env"), readFileSync(path.join(production, "secrets.env.example"))],
    ]),
  };
}

function render(root: string, overlay: string): K8sObject[] {
  return kustomizeBuild(path.join(root, "deploy/overlays", overlay), renderOptions(root));
}

beforeAll(() => {
  modules = serviceModules();
  repo = {
    envoyYaml: readEnvoyYaml(),
    descriptor: Buffer.from(readDescriptor()),
    luaMapper: readFileSync(LUA_MAPPER_PATH, "utf8"),
  };
  for (const overlay of OVERLAYS) rendered.set(overlay, render(REPO, overlay));
});

function objectsOf(overlay: string): K8sObject[] {
  return rendered.get(overlay)!;
}

function get(objects: K8sObject[], kind: string, name: string): K8sObject {
  const o = objects.find(
    (x) => x.kind === kind && (x.metadata.name === name || x.metadata.name.startsWith(`${name}-`)),
  );
  if (!o) throw new Error(`${kind}/${name} not rendered`);
  return o;
}

describe.each(OVERLAYS)("overlay %s", (overlay) => {
  it("renders objects that all validate against the Kubernetes schemas, with no unknown field", async () => {
    const objects = objectsOf(overlay);
    expect(objects.length).toBeGreaterThan(20);
    expect(await schemaErrors(objects)).toEqual([]);
    expect(unknownFieldErrors(objects)).toEqual([]);
  });

  it("has consistent cross-references (selectors, ports, probes, SERVICES, config and secrets, Envoy → Services)", () => {
    expect(checkKubernetesCrossReferences(objectsOf(overlay), modules, repo)).toEqual([]);
  });

  it("runs one hardened Deployment per service module on the gRPC port, behind a headless Service", () => {
    const objects = objectsOf(overlay);
    for (const m of modules) {
      const d = get(objects, "Deployment", m.name);
      const c = d.spec.template.spec.containers[0];
      expect(c.env.find((e: { name: string }) => e.name === "SERVICES").value).toBe(m.name);
      expect(c.readinessProbe.grpc).toEqual({ port: 8081, service: m.publicServices[0] });
      expect(c.securityContext).toMatchObject({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
      });
      expect(get(objects, "Service", m.name).spec.clusterIP).toBe("None");
    }
    // The secrets every module needs are in the overlay's Secret.
    const secret = get(objects, "Secret", "agentplane-secrets");
    expect(Object.keys(secret.data)).toEqual(expect.arrayContaining(["DATABASE_URL", "REDIS_URL"]));
  });

  it("mounts envoy.yaml, the descriptor set and the Lua mapper into Envoy from one content-hashed ConfigMap", () => {
    const objects = objectsOf(overlay);
    const cm = get(objects, "ConfigMap", "envoy-config");
    expect(cm.metadata.name).toMatch(/^envoy-config-[a-z0-9]{10}$/);
    expect(cm.data["envoy.yaml"]).toBe(repo.envoyYaml);
    expect(cm.data["error-mapper.lua"]).toBe(repo.luaMapper);
    expect(Buffer.from(cm.binaryData["api.binpb"], "base64").equals(repo.descriptor)).toBe(true);
    // A ConfigMap holds at most 1 MiB.
    expect(JSON.stringify(cm).length).toBeLessThan(1024 * 1024);
    const envoy = get(objects, "Deployment", "envoy");
    expect(envoy.spec.template.spec.volumes.find((v: { name: string }) => v.name === "config").configMap.name).toBe(
      cm.metadata.name,
    );
  });

  it("serves internal services on 8082 beside the public 8081; probes stay on 8081; the Service exposes both", () => {
    const objects = objectsOf(overlay);
    expect(get(objects, "ConfigMap", "agentplane-config").data).toMatchObject({
      GRPC_PORT: "8081",
      INTERNAL_GRPC_PORT: "8082",
    });
    // Every module but web serves internal services; web (the pages) has the public port alone.
    expect(modules.filter((m) => m.internalServices.length === 0).map((m) => m.name)).toEqual(["web"]);
    for (const m of modules) {
      const internal = m.internalServices.length > 0;
      const c = get(objects, "Deployment", m.name).spec.template.spec.containers[0];
      expect(c.ports).toEqual([
        { name: "grpc", containerPort: 8081, protocol: "TCP" },
        ...(internal ? [{ name: "grpc-internal", containerPort: 8082, protocol: "TCP" }] : []),
      ]);
      for (const probe of [c.startupProbe, c.readinessProbe, c.livenessProbe]) expect(probe.grpc.port).toBe(8081);
      const ports = get(objects, "Service", m.name).spec.ports.map(
        (p: { name: string; port: number; targetPort: string }) => [p.name, p.port, p.targetPort],
      );
      expect(ports).toEqual([["grpc", 8081, "grpc"], ...(internal ? [["grpc-internal", 8082, "grpc-internal"]] : [])]);
    }
  });

  it("admits exactly: anyone to Envoy's listeners, Envoy to the public port, workloads to the internal port, the pods that use them to the datastores", () => {
    const objects = objectsOf(overlay);
    const policies = objects.filter((o) => o.kind === "NetworkPolicy");
    expect(policies.map((p) => p.metadata.name).sort()).toEqual(
      [
        "default-deny-ingress",
        "envoy-from-anywhere",
        "services-internal-from-workloads",
        "services-public-from-envoy",
        ...(overlay === "local" ? ["postgres-from-agentplane", "redis-from-agentplane"] : []),
      ].sort(),
    );
    const elsewhere = (labels: Record<string, string>): Source => ({
      pod: { namespace: "runners", namespaceLabels: { "kubernetes.io/metadata.name": "runners" }, labels },
    });
    const here = (labels: Record<string, string>): Source => ({
      pod: { namespace: "agentplane", namespaceLabels: namespaceLabels(objects, "agentplane"), labels },
    });
    const workload = { "agentplane.dev/workload": "true" };
    const sources: [string, Source][] = [
      ["envoy", podSource(get(objects, "Deployment", "envoy"), objects)],
      ["migrate", podSource(get(objects, "Job", "agentplane-migrate"), objects)],
      ...modules.map((m): [string, Source] => [m.name, podSource(get(objects, "Deployment", m.name), objects)]),
      ["workload in another namespace", elsewhere(workload)],
      ["workload in agentplane's namespace", here(workload)],
      ["unlabelled pod in another namespace", elsewhere({ app: "other" })],
      ["unlabelled pod in agentplane's namespace", here({ app: "debug" })],
      ["the internet", { ip: "203.0.113.7" }],
    ];
    // Every declared port of every pod rendered.
    const targets = objects
      .filter((o) => ["Deployment", "StatefulSet", "Job"].includes(o.kind))
      .flatMap((w) =>
        podOf(w).ports.map((p) => ({ name: `${w.metadata.name}:${p.containerPort}`, w, port: p.containerPort })),
      );
    const isModule = (name: string) => modules.some((m) => m.name === name);
    const expected = (source: string, target: string, port: number): boolean => {
      if (target === "envoy" && (port === 8080 || port === 8081)) return true;
      if (isModule(target) && port === 8081) return source === "envoy";
      if (isModule(target) && port === 8082) return source.startsWith("workload");
      if (target === "postgres") return isModule(source) || source === "migrate";
      if (target === "redis") return isModule(source);
      return false; // Envoy's health port 8099: the kubelet only
    };
    const allowed: string[] = [];
    const want: string[] = [];
    for (const [source, s] of sources) {
      for (const { name, w, port } of targets) {
        if (admits(policies, s, podOf(w), port)) allowed.push(`${source} -> ${name}`);
        if (expected(source, w.metadata.name, port)) want.push(`${source} -> ${name}`);
      }
    }
    expect(targets.length).toBe(overlay === "local" ? 16 : 14);
    expect(allowed).toEqual(want);
  });
});

describe("overlay differences", () => {
  it("local runs Postgres and Redis in the cluster; production uses managed ones from its secrets file", () => {
    const local = objectsOf("local");
    const production = objectsOf("production");
    expect(get(local, "StatefulSet", "postgres")).toBeDefined();
    expect(get(local, "Deployment", "redis")).toBeDefined();
    expect(production.some((o) => o.metadata.name === "postgres" || o.metadata.name === "redis")).toBe(false);
    const url = (objects: K8sObject[]) =>
      Buffer.from(get(objects, "Secret", "agentplane-secrets").data.DATABASE_URL, "base64").toString();
    expect(url(local)).toBe("postgres://agentplane:agentplane-local@postgres:5432/agentplane");
    expect(url(production)).toMatch(/^postgres:\/\/.*sslmode=require$/);
  });

  it("production scales further and spreads over zones; local runs one pod of each", () => {
    for (const m of modules) {
      expect(get(objectsOf("production"), "HorizontalPodAutoscaler", m.name).spec).toMatchObject({
        minReplicas: 3,
        maxReplicas: 20,
      });
      expect(get(objectsOf("local"), "HorizontalPodAutoscaler", m.name).spec).toMatchObject({
        minReplicas: 1,
        maxReplicas: 2,
      });
      const spread = get(objectsOf("production"), "Deployment", m.name).spec.template.spec.topologySpreadConstraints;
      expect(spread.map((s: { topologyKey: string }) => s.topologyKey)).toEqual([
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
      ]);
    }
    expect(get(objectsOf("production"), "Service", "envoy").spec.type).toBe("LoadBalancer");
  });

  it("pins the images: the binary's tag comes from the overlay", () => {
    expect(get(objectsOf("local"), "Deployment", "sessions").spec.template.spec.containers[0].image).toBe(
      "agentplane:dev",
    );
    expect(get(objectsOf("production"), "Job", "agentplane-migrate").spec.template.spec.containers[0].image).toBe(
      "registry.example.com/agentplane:0.1.0",
    );
  });

  it("fails to render production without its secrets file, naming it", () => {
    expect(() => kustomizeBuild(path.join(REPO, "deploy/overlays/production"))).toThrow(/secrets\.env: no such file/);
  });

  it("gives Envoy the top-level envoy.yaml, from its byte-identical copy in deploy/envoy (npm run generate)", () => {
    expect(readFileSync(path.join(REPO, "deploy/envoy/envoy.yaml")).equals(readFileSync(ENVOY_YAML_PATH))).toBe(true);
  });
});

describe("the example runner (deploy/examples/session-runner.yaml), which no overlay includes", () => {
  const EXAMPLE = path.join(REPO, "deploy/examples/session-runner.yaml");
  let example: K8sObject[];
  let runner: K8sObject;
  beforeAll(() => {
    example = YAML.parseAllDocuments(readFileSync(EXAMPLE, "utf8")).map((d) => d.toJS() as K8sObject);
    runner = example.find((o) => o.kind === "Deployment")!;
  });

  it("validates against the schemas and is hardened like agentplane's own pods", async () => {
    expect(example.map((o) => o.kind)).toEqual(["Namespace", "Deployment"]);
    expect(await schemaErrors(example)).toEqual([]);
    expect(unknownFieldErrors(example)).toEqual([]);
    expect(checkHardening(runner)).toEqual([]);
    for (const overlay of OVERLAYS)
      expect(objectsOf(overlay).some((o) => o.metadata.name === runner.metadata.name)).toBe(false);
  });

  it.each(OVERLAYS)(
    "in overlay %s, reaches the internal port of the module its URL names, and nothing else of agentplane's",
    (overlay) => {
      const objects = objectsOf(overlay);
      const policies = objects.filter((o) => o.kind === "NetworkPolicy");
      const c = runner.spec.template.spec.containers[0];
      const url = new URL(c.env.find((e: { name: string }) => e.name === "AGENTPLANE_SESSIONS_URL").value);
      const [service, namespace] = url.hostname.split(".");
      expect(url.hostname).toBe(`${service}.${namespace}.svc.cluster.local`);
      expect(namespace).toBe(get(objects, "Namespace", "agentplane").metadata.name);
      // The URL's port is the Service port that reaches the module's INTERNAL_GRPC_PORT.
      const servicePort = get(objects, "Service", service!).spec.ports.find(
        (p: { port: number }) => p.port === Number(url.port),
      );
      const module = get(objects, "Deployment", service!);
      const reached = podOf(module).ports.find((p) => p.name === servicePort.targetPort)!.containerPort;
      expect(String(reached)).toBe(get(objects, "ConfigMap", "agentplane-config").data.INTERNAL_GRPC_PORT);

      const source = {
        pod: {
          namespace: runner.metadata.namespace!,
          namespaceLabels: namespaceLabels(example, runner.metadata.namespace!),
          labels: runner.spec.template.metadata.labels,
        },
      };
      const reachable = objects
        .filter((o) => ["Deployment", "StatefulSet", "Job"].includes(o.kind))
        .flatMap((w) =>
          podOf(w)
            .ports.filter((p) => admits(policies, source, podOf(w), p.containerPort))
            .map((p) => `${w.metadata.name}:${p.name}`),
        );
      const withInternal = modules.filter((m) => m.internalServices.length > 0);
      expect(reachable.sort()).toEqual(
        ["envoy:http", "envoy:grpc", ...withInternal.map((m) => `${m.name}:grpc-internal`)].sort(),
      );
      // Its label is what lets it in.
      const unlabelled = { pod: { ...source.pod, labels: { "app.kubernetes.io/name": "session-runner" } } };
      expect(admits(policies, unlabelled, podOf(module), reached)).toBe(false);
    },
  );

  it("uses the Secret and key that deploy/README.md's commands create", () => {
    const ref = runner.spec.template.spec.containers[0].env.find((e: { name: string }) => e.name === "AGENTPLANE_TOKEN")
      .valueFrom.secretKeyRef;
    const readme = readFileSync(path.join(REPO, "deploy/README.md"), "utf8");
    expect(readme).toContain(
      `kubectl -n ${runner.metadata.namespace} create secret generic ${ref.name} --from-file=${ref.key}=/dev/stdin`,
    );
    expect(readme).toContain("service-account create --name runner-eu-1 --scopes sessions.runner");
  });
});

// ---------------------------------------------------------------------------------------------
// Broken copies of the repository's deploy/, rendered and checked like the real one.

describe("a deliberately broken copy of deploy/ fails", () => {
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(path.join(tmpdir(), "agentplane-deploy-"));
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  /** A copy of deploy/ (which renders from nothing outside it) with one textual change in one file, rendered. */
  function renderBroken(file: string, from: string | RegExp, to: string, overlay = "local"): K8sObject[] {
    const root = mkdtempSync(path.join(scratch, "copy-"));
    cpSync(path.join(REPO, "deploy"), path.join(root, "deploy"), { recursive: true });
    const target = path.join(root, file);
    const text = readFileSync(target, "utf8");
    const changed = text.replace(from, to);
    expect(changed, `${file} must contain ${from}`).not.toBe(text);
    writeFileSync(target, changed);
    return render(root, overlay);
  }

  it("a misspelled field in a Deployment", () => {
    const objects = renderBroken(
      "deploy/base/services/sessions.yaml",
      "readOnlyRootFilesystem: true",
      "readOnlyRootFileSystem: true",
    );
    expect(unknownFieldErrors(objects)).toContainEqual(
      'Deployment/sessions: spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem: unknown field "readOnlyRootFileSystem"',
    );
    // ... which the hardening check reports too: the real field is now missing.
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      expect.stringMatching(/Deployment\/sessions sessions: needs readOnlyRootFilesystem: true/),
    );
  });

  it("a value of the wrong type", async () => {
    const objects = renderBroken("deploy/base/services/readiness.yaml", "containerPort: 8081", 'containerPort: "8081"');
    expect(await schemaErrors(objects)).toContainEqual(
      expect.stringMatching(/Deployment\/readiness: .*containerPort must be integer/),
    );
  });

  it("a Service selector that matches nothing", () => {
    const objects = renderBroken(
      "deploy/base/services/computers.yaml",
      /(kind: Service[\s\S]*?selector:[\s\S]*?app\.kubernetes\.io\/component: )computers/,
      "$1computer",
    );
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      expect.stringMatching(/^Service\/computers: its selector .* matches no pod$/),
    );
  });

  it("a probe on a port the container does not expose", () => {
    const objects = renderBroken(
      "deploy/base/services/analytics.yaml",
      "livenessProbe:\n          grpc: { port: 8081 }",
      "livenessProbe:\n          grpc: { port: 9090 }",
    );
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      "Deployment/analytics analytics.livenessProbe: probes port 9090, which the container does not expose",
    );
  });

  it("a SERVICES value that names no service module", () => {
    const objects = renderBroken("deploy/base/services/sessions.yaml", "value: sessions", "value: session");
    const problems = checkKubernetesCrossReferences(objects, modules, repo);
    expect(problems).toContainEqual(
      expect.stringMatching(/Deployment\/sessions sessions: SERVICES=session: .*unknown service "session"/),
    );
    expect(problems).toContainEqual("module sessions: 0 Deployments serve it (want exactly one)");
  });

  it("an Envoy cluster whose Service does not exist", () => {
    const objects = renderBroken(
      "deploy/envoy/envoy.yaml",
      "socket_address: { address: readiness, port_value: 8081 }",
      "socket_address: { address: readyness, port_value: 8081 }",
    );
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      "envoy cluster readiness (readyness:8081): no Service readyness in namespace agentplane",
    );
  });

  it("an Envoy cluster on the wrong port", () => {
    const objects = renderBroken(
      "deploy/envoy/envoy.yaml",
      "socket_address: { address: sessions, port_value: 8081 }",
      "socket_address: { address: sessions, port_value: 8080 }",
    );
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      "envoy cluster sessions (sessions:8080): Service sessions has no port 8080",
    );
  });

  it("a ConfigMap mounted where envoy.yaml does not look for the Lua mapper", () => {
    const objects = renderBroken(
      "deploy/envoy/kustomization.yaml",
      "  - error-mapper.lua\n",
      "  - lua-mapper.lua=error-mapper.lua\n",
    );
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      "Deployment/envoy: the Lua script /etc/envoy/error-mapper.lua that envoy.yaml reads is not mounted",
    );
  });

  it("a Secret key that no generator provides", () => {
    const objects = renderBroken(
      "deploy/components/in-cluster-datastores/kustomization.yaml",
      "- REDIS_URL=redis://redis:6379",
      "- REDIS=redis://redis:6379",
    );
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      expect.stringMatching(
        /^Deployment\/sessions sessions\.env REDIS_URL: Secret agentplane-secrets-\w+ has no key REDIS_URL$/,
      ),
    );
  });

  it("a pod that may run as root", () => {
    const objects = renderBroken("deploy/base/migrate-job.yaml", /^ *runAsNonRoot: true\n/gm, "");
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      "Job/agentplane-migrate migrate: must run as non-root (runAsNonRoot)",
    );
  });

  it("a misspelled field in a NetworkPolicy", () => {
    const objects = renderBroken(
      "deploy/base/network-policies.yaml",
      "  podSelector: {}\n  policyTypes",
      "  podSelecter: {}\n  policyTypes",
    );
    expect(unknownFieldErrors(objects)).toContainEqual(
      'NetworkPolicy/default-deny-ingress: spec.podSelecter: unknown field "podSelecter"',
    );
  });

  it("a NetworkPolicy value of the wrong type", async () => {
    const objects = renderBroken(
      "deploy/base/network-policies.yaml",
      /(name: envoy-from-anywhere[\s\S]*?)policyTypes: \["Ingress"\]/,
      "$1policyTypes: Ingress",
    );
    expect(await schemaErrors(objects)).toContainEqual(
      expect.stringMatching(/^NetworkPolicy\/envoy-from-anywhere: .*policyTypes must be array/),
    );
  });

  it("a NetworkPolicy naming a port the selected pods lack", () => {
    const objects = renderBroken("deploy/base/network-policies.yaml", "port: grpc-internal,", "port: grpc-intern,");
    const problems = checkKubernetesCrossReferences(objects, modules, repo);
    expect(problems).toContainEqual(
      "NetworkPolicy/services-internal-from-workloads ingress[0]: port grpc-intern is not a port of Deployment/sessions",
    );
    // ... and workloads no longer get in.
    expect(problems).toContainEqual(
      "Deployment/sessions: a pod labelled agentplane.dev/workload=true in another namespace cannot reach the internal gRPC port 8082",
    );
  });

  it("a NetworkPolicy pod selector that matches no pod", () => {
    const objects = renderBroken(
      "deploy/base/network-policies.yaml",
      /(name: services-public-from-envoy[\s\S]*?component: )envoy/,
      "$1edge",
    );
    const problems = checkKubernetesCrossReferences(objects, modules, repo);
    expect(problems).toContainEqual(
      "NetworkPolicy/services-public-from-envoy ingress[0].from[0]: its podSelector matches no pod",
    );
    expect(problems).toContainEqual(
      "envoy cluster sessions (sessions:8081): no NetworkPolicy admits the Envoy pods to port 8081 of Deployment/sessions",
    );
  });

  it("a NetworkPolicy selecting no pod", () => {
    const objects = renderBroken(
      "deploy/components/in-cluster-datastores/network-policies.yaml",
      "app.kubernetes.io/component: cache",
      "app.kubernetes.io/component: caches",
    );
    const problems = checkKubernetesCrossReferences(objects, modules, repo);
    expect(problems).toContainEqual("NetworkPolicy/redis-from-agentplane: its podSelector matches no pod");
    expect(problems).toContainEqual(
      "Deployment/sessions: uses Service/redis, but Deployment/redis does not admit it on port 6379",
    );
  });

  it("the internal port open to every pod: the namespace and pod selectors as two peers instead of one", () => {
    const objects = renderBroken(
      "deploy/base/network-policies.yaml",
      "    - namespaceSelector: {}\n      podSelector:",
      "    - namespaceSelector: {}\n    - podSelector:",
    );
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      "NetworkPolicy/services-internal-from-workloads ingress[0]: admits the internal gRPC port 8082 of Deployment/analytics from pods not labelled agentplane.dev/workload=true",
    );
  });

  it("the internal port admitted by another label", () => {
    const objects = renderBroken(
      "deploy/base/network-policies.yaml",
      'matchLabels:\n          agentplane.dev/workload: "true"',
      'matchLabels:\n          agentplane.dev/runner: "true"',
    );
    const problems = checkKubernetesCrossReferences(objects, modules, repo);
    expect(problems).toContainEqual(
      expect.stringMatching(
        /^NetworkPolicy\/services-internal-from-workloads ingress\[0\]: admits the internal gRPC port 8082 of Deployment\/computers from pods not labelled/,
      ),
    );
    expect(problems).toContainEqual(
      "Deployment/computers: a pod labelled agentplane.dev/workload=true in another namespace cannot reach the internal gRPC port 8082",
    );
  });

  it("the public port open beyond Envoy", () => {
    const objects = renderBroken(
      "deploy/base/network-policies.yaml",
      /(name: services-public-from-envoy[\s\S]*?)- podSelector:/,
      "$1- namespaceSelector: {}\n      podSelector:",
    );
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      "NetworkPolicy/services-public-from-envoy ingress[0]: admits the public gRPC port 8081 of Deployment/readiness from more than the Envoy pods",
    );
  });

  it("no default deny", () => {
    const objects = renderBroken("deploy/base/kustomization.yaml", "- network-policies.yaml\n", "");
    const problems = checkKubernetesCrossReferences(objects, modules, repo);
    expect(problems).toContainEqual(
      "Job/agentplane-migrate: no NetworkPolicy isolates its pods for ingress (want a default deny)",
    );
    expect(problems).toContainEqual(
      "Deployment/organization: no NetworkPolicy isolates its pods for ingress (want a default deny)",
    );
  });

  it("a datastore admitting a pod that does not use it", () => {
    const objects = renderBroken(
      "deploy/components/in-cluster-datastores/network-policies.yaml",
      /(name: redis-from-agentplane[\s\S]*?organization, web)\]/,
      "$1, migrate]",
    );
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      "Deployment/redis: admits Job/agentplane-migrate on port 6379, which it does not use",
    );
  });

  it("a datastore refusing a pod that uses it", () => {
    const objects = renderBroken(
      "deploy/components/in-cluster-datastores/network-policies.yaml",
      "organization, web, migrate]",
      "organization, web]",
    );
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      "Job/agentplane-migrate: uses Service/postgres, but StatefulSet/postgres does not admit it on port 5432",
    );
  });

  it("an Envoy cluster on the internal port", () => {
    const objects = renderBroken(
      "deploy/envoy/envoy.yaml",
      "socket_address: { address: sessions, port_value: 8081 }",
      "socket_address: { address: sessions, port_value: 8082 }",
    );
    const problems = checkKubernetesCrossReferences(objects, modules, repo);
    expect(problems).toContainEqual(
      "envoy cluster sessions (sessions:8082): Service sessions port 8082 does not reach the gRPC port 8081 of Deployment/sessions",
    );
    expect(problems).toContainEqual(
      "envoy cluster sessions (sessions:8082): no NetworkPolicy admits the Envoy pods to port 8082 of Deployment/sessions",
    );
  });

  it("a Service whose public port targets the internal one", () => {
    const objects = renderBroken(
      "deploy/base/services/sessions.yaml",
      "port: 8081\n    targetPort: grpc\n",
      "port: 8081\n    targetPort: grpc-internal\n",
    );
    const problems = checkKubernetesCrossReferences(objects, modules, repo);
    expect(problems).toContainEqual(
      "envoy cluster sessions (sessions:8081): Service sessions port 8081 does not reach the gRPC port 8081 of Deployment/sessions",
    );
    // A headless Service translates no port: Envoy would still dial 8081, the Service claims 8082.
    expect(problems).toContainEqual(
      "envoy cluster sessions (sessions:8081): Envoy dials the pods of the headless Service sessions on 8081, but that Service port targets container port 8082",
    );
  });

  it("no INTERNAL_GRPC_PORT", () => {
    const objects = renderBroken("deploy/base/kustomization.yaml", "  - INTERNAL_GRPC_PORT=8082\n", "");
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      "Deployment/readiness: needs INTERNAL_GRPC_PORT (readiness serves agentplane.readiness.v1.ReportSubmissionService)",
    );
  });

  it("INTERNAL_GRPC_PORT equal to GRPC_PORT", () => {
    const objects = renderBroken(
      "deploy/base/kustomization.yaml",
      "  - INTERNAL_GRPC_PORT=8082\n",
      "  - INTERNAL_GRPC_PORT=8081\n",
    );
    const problems = checkKubernetesCrossReferences(objects, modules, repo);
    expect(problems).toContainEqual(
      "Deployment/analytics: INTERNAL_GRPC_PORT and GRPC_PORT are both 8081; the internal services need a port of their own",
    );
  });

  it("a container that does not declare the internal port", () => {
    const objects = renderBroken(
      "deploy/base/services/organization.yaml",
      "containerPort: 8082",
      "containerPort: 8083",
    );
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      "Deployment/organization organization: does not declare its internal gRPC port 8082",
    );
  });

  it("a Service without the internal port", () => {
    const objects = renderBroken(
      "deploy/base/services/computers.yaml",
      // biome-ignore lint/complexity/noAdjacentSpacesInRegex: the spaces are the YAML's indentation, written as it appears in computers.yaml
      /  - name: grpc-internal\n    port: 8082\n[\s\S]*?appProtocol: kubernetes.io\/h2c\n/,
      "",
    );
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      "Deployment/computers: no Service exposes its internal gRPC port 8082 (agentplane.computers.v1alpha1.HostService)",
    );
  });

  it("a Service exposing the internal port of a module that serves no internal service", () => {
    const withoutInternal = modules.map((m) => (m.name === "analytics" ? { ...m, internalServices: [] } : m));
    expect(checkKubernetesCrossReferences(objectsOf("local"), withoutInternal, repo)).toEqual([
      "Service/analytics port grpc-internal: exposes the internal gRPC port 8082 of Deployment/analytics, whose module analytics serves no internal service",
    ]);
  });

  it("a generator reading a file outside its kustomization's directory (kustomize's default load restrictor)", () => {
    expect(() =>
      renderBroken("deploy/envoy/kustomization.yaml", "  - envoy.yaml\n", "  - envoy.yaml=../../envoy.yaml\n"),
    ).toThrow(/envoy\.yaml' is not in or below '.*deploy\/envoy'/);
  });

  it("an overlay merging into a Secret that only its component makes (kustomize runs components last)", () => {
    expect(() =>
      renderBroken(
        "deploy/overlays/local/kustomization.yaml",
        "- name: agentplane-secrets\n  literals:",
        "- name: agentplane-secrets\n  behavior: merge\n  literals:",
      ),
    ).toThrow(/Secret agentplane-secrets does not exist to merge/);
  });

  it("a stale deploy/envoy/envoy.yaml, no longer the top-level envoy.yaml", () => {
    const objects = renderBroken("deploy/envoy/envoy.yaml", "# A request's way through:", "# A request's path:");
    expect(checkKubernetesCrossReferences(objects, modules, repo)).toContainEqual(
      "Deployment/envoy: /etc/envoy/envoy.yaml differs from the repository's envoy.yaml",
    );
  });

  it("a kustomization field this renderer does not model", () => {
    expect(() =>
      renderBroken(
        "deploy/overlays/local/kustomization.yaml",
        "namespace: agentplane",
        "namespace: agentplane\nnamePrefix: x-",
      ),
    ).toThrow(KustomizeError);
  });
});
