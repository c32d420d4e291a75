// Cross-references inside rendered Kubernetes manifests, and between them and the rest of the
// repository: what `kubectl apply` accepts but a running cluster would trip over.
//   * Service, PodDisruptionBudget and HorizontalPodAutoscaler targets select real pods/Deployments;
//   * Service target ports and probe ports exist on the selected containers;
//   * every referenced ConfigMap/Secret (and key) exists; SERVICES names real service modules;
//   * one Deployment per module, hardened, probed over grpc.health.v1, with a PDB and an HPA;
//   * Envoy's clusters resolve to those Services, and its ConfigMap holds the repository's
//     envoy.yaml, descriptor set and Lua mapper at the paths envoy.yaml reads them from.
//   * each module listens for its internal services on INTERNAL_GRPC_PORT, apart from GRPC_PORT,
//     declares that port and its Service exposes it;
//   * NetworkPolicies (k8s-network.ts models them): each selects pods and names ports they have;
//     every pod is isolated for ingress; a module's public gRPC port admits the Envoy pods only
//     (and they get in on the port their cluster names), its internal port admits only pods
//     labelled agentplane.dev/workload=true (and such a pod in another namespace gets in); an
//     in-cluster datastore admits exactly the agentplane pods whose DATABASE_URL / REDIS_URL name it.
import path from "node:path";
import { parseServices } from "../../services/platform/config.js";
import { clusterEndpoints, envoyFiles, parseEnvoyYaml } from "./envoy-config.js";
import {
  admits,
  ingressPoliciesOf,
  labelSelectorMatches,
  podOf,
  podSource,
  requiresLabel,
  resolvePort,
  rulePortsCover,
  type Pod,
  type Source,
} from "./k8s-network.js";
import type { K8sObject } from "./kustomize.js";
import type { ModuleFacts } from "./service-modules.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

export interface RepositoryFiles {
  readonly envoyYaml: string;
  readonly descriptor: Buffer;
  readonly luaMapper: string;
}

const WORKLOADS = new Set(["Deployment", "StatefulSet", "DaemonSet", "Job"]);

function id(o: K8sObject): string {
  return `${o.kind}/${o.metadata.name}`;
}

function selects(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

/** A workload's own selector: an empty one is invalid for apps/v1, so it matches nothing here. */
function workloadSelectorMatches(sel: Any, labels: Record<string, string> | undefined): boolean {
  if (!sel || (Object.keys(sel.matchLabels ?? {}).length === 0 && (sel.matchExpressions ?? []).length === 0))
    return false;
  return labelSelectorMatches(sel, labels ?? {});
}

function podSpec(o: K8sObject): Any {
  return o.spec?.template?.spec;
}

function podLabels(o: K8sObject): Record<string, string> | undefined {
  return o.spec?.template?.metadata?.labels;
}

function containers(o: K8sObject): Any[] {
  return [...(podSpec(o)?.initContainers ?? []), ...(podSpec(o)?.containers ?? [])];
}

function imageName(image: string): string {
  const at = image.indexOf("@");
  const rest = at === -1 ? image : image.slice(0, at);
  const colon = rest.lastIndexOf(":");
  return colon > rest.lastIndexOf("/") ? rest.slice(0, colon) : rest;
}

/** Is this container the agentplane binary? (The image the overlays set for `agentplane`.) */
function runsAgentplane(c: Any): boolean {
  const name = imageName(String(c.image));
  return name === "agentplane" || name.endsWith("/agentplane");
}

function portExists(container: Any, port: unknown): boolean {
  return (container.ports ?? []).some((p: Any) => p.name === port || p.containerPort === port);
}

/** The container's environment as the kubelet builds it: envFrom ConfigMaps, then env (literal values only). */
function literalEnv(c: Any, objects: readonly K8sObject[], namespace: string | undefined): Map<string, string> {
  const env = new Map<string, string>();
  for (const from of c.envFrom ?? []) {
    const cm = from.configMapRef && find(objects, "ConfigMap", from.configMapRef.name, namespace);
    for (const [k, v] of Object.entries(cm?.data ?? {})) env.set((from.prefix ?? "") + k, String(v));
  }
  for (const e of c.env ?? []) if (e.value !== undefined) env.set(e.name, String(e.value));
  return env;
}

function find(
  objects: readonly K8sObject[],
  kind: string,
  name: string,
  namespace: string | undefined,
): K8sObject | undefined {
  return objects.find((o) => o.kind === kind && o.metadata.name === name && o.metadata.namespace === namespace);
}

function dataKeys(o: K8sObject | undefined): Set<string> {
  return new Set([
    ...Object.keys(o?.data ?? {}),
    ...Object.keys(o?.stringData ?? {}),
    ...Object.keys(o?.binaryData ?? {}),
  ]);
}

export function checkKubernetesCrossReferences(
  objects: readonly K8sObject[],
  modules: readonly ModuleFacts[],
  repo: RepositoryFiles,
): string[] {
  const problems: string[] = [];
  const fail = (where: string, what: string) => problems.push(`${where}: ${what}`);
  const workloads = objects.filter((o) => WORKLOADS.has(o.kind));

  for (const w of workloads) {
    const ns = w.metadata.namespace;
    if (w.kind !== "Job" && !workloadSelectorMatches(w.spec?.selector, podLabels(w)))
      fail(id(w), "its selector does not match its own pod template labels");
    problems.push(...checkReferences(w, objects));
    problems.push(...checkHardening(w));
    for (const c of containers(w)) {
      for (const probe of ["readinessProbe", "livenessProbe", "startupProbe"] as const) {
        const p = c[probe];
        if (!p) continue;
        const port = p.grpc?.port ?? p.httpGet?.port ?? p.tcpSocket?.port;
        if (port !== undefined && !portExists(c, port))
          fail(`${id(w)} ${c.name}.${probe}`, `probes port ${port}, which the container does not expose`);
      }
      if (!runsAgentplane(c)) continue;
      const env = literalEnv(c, objects, ns);
      const services = env.get("SERVICES");
      if (services !== undefined) {
        try {
          parseServices(services);
        } catch (e) {
          fail(`${id(w)} ${c.name}`, `SERVICES=${services}: ${(e as Error).message}`);
        }
      }
      if ((c.args ?? [])[0] === "serve" && env.get("HOST") !== "0.0.0.0")
        fail(`${id(w)} ${c.name}`, "HOST must be 0.0.0.0 in a pod (else nothing outside the pod reaches it)");
    }
  }

  // Services select pods and target ports those pods expose.
  for (const svc of objects.filter((o) => o.kind === "Service")) {
    const ns = svc.metadata.namespace;
    const selected = workloads.filter((w) => w.metadata.namespace === ns && selects(svc.spec?.selector, podLabels(w)));
    if (selected.length === 0) {
      fail(id(svc), `its selector ${JSON.stringify(svc.spec?.selector)} matches no pod`);
      continue;
    }
    for (const port of svc.spec?.ports ?? []) {
      const target = port.targetPort ?? port.port;
      for (const w of selected) {
        if (!containers(w).some((c) => portExists(c, target)))
          fail(`${id(svc)} port ${port.name ?? port.port}`, `targets ${target}, which ${id(w)} does not expose`);
      }
    }
  }

  // PodDisruptionBudgets and autoscalers point at something.
  for (const pdb of objects.filter((o) => o.kind === "PodDisruptionBudget")) {
    const matched = workloads.filter(
      (w) =>
        w.kind !== "Job" &&
        w.metadata.namespace === pdb.metadata.namespace &&
        selects(pdb.spec?.selector?.matchLabels, podLabels(w)),
    );
    if (matched.length === 0) fail(id(pdb), "its selector matches no pod");
  }
  for (const hpa of objects.filter((o) => o.kind === "HorizontalPodAutoscaler")) {
    const ref = hpa.spec?.scaleTargetRef ?? {};
    const target = find(objects, ref.kind, ref.name, hpa.metadata.namespace);
    if (!target) fail(id(hpa), `scales ${ref.kind}/${ref.name}, which does not exist`);
    else if (target.spec?.replicas !== undefined)
      fail(id(hpa), `${id(target)} sets spec.replicas, which fights the autoscaler on every apply`);
    if (hpa.spec?.minReplicas > hpa.spec?.maxReplicas) fail(id(hpa), "minReplicas exceeds maxReplicas");
  }

  problems.push(...checkModules(objects, modules));
  problems.push(...checkModulePorts(objects, modules));
  problems.push(...checkNetworkPolicies(objects, modules));
  problems.push(...checkEnvoy(objects, modules, repo));
  return problems;
}

/** ConfigMaps, Secrets and their keys that a pod spec needs exist (unless marked optional). */
function checkReferences(w: K8sObject, objects: readonly K8sObject[]): string[] {
  const problems: string[] = [];
  const ns = w.metadata.namespace;
  const need = (kind: string, name: string, key: string | undefined, optional: boolean | undefined, where: string) => {
    if (optional === true) return;
    const o = find(objects, kind, name, ns);
    if (!o) problems.push(`${id(w)} ${where}: ${kind} ${name} does not exist`);
    else if (key !== undefined && !dataKeys(o).has(key))
      problems.push(`${id(w)} ${where}: ${kind} ${name} has no key ${key}`);
  };
  for (const v of podSpec(w)?.volumes ?? []) {
    if (v.configMap) need("ConfigMap", v.configMap.name, undefined, v.configMap.optional, `volume ${v.name}`);
    if (v.secret) need("Secret", v.secret.secretName, undefined, v.secret.optional, `volume ${v.name}`);
  }
  for (const c of containers(w)) {
    for (const from of c.envFrom ?? []) {
      if (from.configMapRef)
        need("ConfigMap", from.configMapRef.name, undefined, from.configMapRef.optional, `${c.name}.envFrom`);
      if (from.secretRef) need("Secret", from.secretRef.name, undefined, from.secretRef.optional, `${c.name}.envFrom`);
    }
    for (const e of c.env ?? []) {
      const cm = e.valueFrom?.configMapKeyRef;
      const sec = e.valueFrom?.secretKeyRef;
      if (cm) need("ConfigMap", cm.name, cm.key, cm.optional, `${c.name}.env ${e.name}`);
      if (sec) need("Secret", sec.name, sec.key, sec.optional, `${c.name}.env ${e.name}`);
    }
    for (const m of c.volumeMounts ?? []) {
      if (
        !(podSpec(w)?.volumes ?? []).some((v: Any) => v.name === m.name) &&
        !(w.spec?.volumeClaimTemplates ?? []).some((t: Any) => t.metadata?.name === m.name)
      ) {
        problems.push(`${id(w)} ${c.name}: mounts volume ${m.name}, which the pod does not define`);
      }
    }
  }
  return problems;
}

/** Non-root, read-only root filesystem, no capabilities, no privilege escalation, requests and limits. */
export function checkHardening(w: K8sObject): string[] {
  const problems: string[] = [];
  const pod = podSpec(w) ?? {};
  for (const c of containers(w)) {
    const where = `${id(w)} ${c.name}`;
    const sc = c.securityContext ?? {};
    if ((sc.runAsNonRoot ?? pod.securityContext?.runAsNonRoot) !== true)
      problems.push(`${where}: must run as non-root (runAsNonRoot)`);
    if ((sc.runAsUser ?? pod.securityContext?.runAsUser) === 0) problems.push(`${where}: runs as uid 0`);
    if (sc.readOnlyRootFilesystem !== true) problems.push(`${where}: needs readOnlyRootFilesystem: true`);
    if (sc.allowPrivilegeEscalation !== false) problems.push(`${where}: needs allowPrivilegeEscalation: false`);
    if (!(sc.capabilities?.drop ?? []).includes("ALL") || (sc.capabilities?.add ?? []).length > 0)
      problems.push(`${where}: must drop ALL capabilities and add none`);
    if (sc.privileged === true) problems.push(`${where}: privileged`);
    for (const kind of ["requests", "limits"]) {
      for (const r of ["cpu", "memory"])
        if (c.resources?.[kind]?.[r] === undefined) problems.push(`${where}: no ${r} ${kind}`);
    }
    const image = String(c.image);
    if (!/[:@]/.test(image.slice(image.lastIndexOf("/") + 1)) || image.endsWith(":latest"))
      problems.push(`${where}: image ${image} needs a fixed tag or digest`);
  }
  if ((pod.securityContext?.seccompProfile?.type ?? "") !== "RuntimeDefault")
    problems.push(`${id(w)}: needs seccompProfile RuntimeDefault`);
  if (pod.automountServiceAccountToken !== false) problems.push(`${id(w)}: needs automountServiceAccountToken: false`);
  return problems;
}

/** One Deployment per service module, each with gRPC probes, a Service, a PDB and an HPA; the migration Job. */
function checkModules(objects: readonly K8sObject[], modules: readonly ModuleFacts[]): string[] {
  const problems: string[] = [];
  const deployments = objects.filter((o) => o.kind === "Deployment");
  const servedBy = new Map<string, K8sObject[]>();
  for (const d of deployments) {
    for (const c of containers(d)) {
      if (!runsAgentplane(c)) continue;
      const services = literalEnv(c, objects, d.metadata.namespace).get("SERVICES");
      if (services === undefined) {
        problems.push(`${id(d)}: runs agentplane without SERVICES (it would run every module and the TypeScript edge)`);
        continue;
      }
      let names: string[] = [];
      try {
        names = parseServices(services);
      } catch {
        continue; // reported with the workload
      }
      for (const n of names) servedBy.set(n, [...(servedBy.get(n) ?? []), d]);
      const module = modules.find((m) => m.name === names[0]);
      if (names.length !== 1 || !module) {
        problems.push(`${id(d)}: SERVICES=${services} must name exactly one service module`);
        continue;
      }
      const readiness = c.readinessProbe?.grpc;
      if (!readiness) problems.push(`${id(d)}: needs a gRPC readiness probe (grpc.health.v1)`);
      else if (
        readiness.service &&
        !module.publicServices.includes(readiness.service) &&
        !module.internalServices.includes(readiness.service)
      ) {
        problems.push(
          `${id(d)}: the readiness probe asks for ${readiness.service}, which ${module.name} does not serve`,
        );
      }
      if (!c.livenessProbe?.grpc) problems.push(`${id(d)}: needs a gRPC liveness probe (grpc.health.v1)`);
      const ns = d.metadata.namespace;
      if (
        !objects.some(
          (o) =>
            o.kind === "PodDisruptionBudget" &&
            o.metadata.namespace === ns &&
            selects(o.spec?.selector?.matchLabels, podLabels(d)),
        )
      )
        problems.push(`${id(d)}: no PodDisruptionBudget`);
      if (
        !objects.some(
          (o) =>
            o.kind === "HorizontalPodAutoscaler" &&
            o.metadata.namespace === ns &&
            o.spec?.scaleTargetRef?.name === d.metadata.name,
        )
      )
        problems.push(`${id(d)}: no HorizontalPodAutoscaler`);
    }
  }
  for (const m of modules) {
    const runs = servedBy.get(m.name) ?? [];
    if (runs.length !== 1) problems.push(`module ${m.name}: ${runs.length} Deployments serve it (want exactly one)`);
  }
  const migrate = objects.filter(
    (o) => o.kind === "Job" && containers(o).some((c) => runsAgentplane(c) && (c.args ?? [])[0] === "migrate"),
  );
  if (migrate.length !== 1) problems.push(`${migrate.length} migration Jobs (want one running \`agentplane migrate\`)`);
  return problems;
}

/** The label that admits a pod to the modules' internal gRPC port (deploy/base/network-policies.yaml). */
const WORKLOAD_LABEL = { key: "agentplane.dev/workload", value: "true" } as const;

/** A workload pod in a namespace of its own, as a runner, a host or an ingest client runs. */
const WORKLOAD_ELSEWHERE: Source = {
  pod: {
    namespace: "workloads",
    namespaceLabels: { "kubernetes.io/metadata.name": "workloads" },
    labels: { [WORKLOAD_LABEL.key]: WORKLOAD_LABEL.value },
  },
};

interface ModuleContainer {
  readonly d: K8sObject;
  readonly c: Any;
  readonly module: ModuleFacts;
  readonly grpcPort: number;
  /** INTERNAL_GRPC_PORT as set (undefined when unset). */
  readonly internalPort: number | undefined;
}

/** The agentplane container of each module Deployment (those checkModules accepts). */
function moduleContainers(objects: readonly K8sObject[], modules: readonly ModuleFacts[]): ModuleContainer[] {
  const out: ModuleContainer[] = [];
  for (const d of objects.filter((o) => o.kind === "Deployment")) {
    for (const c of containers(d).filter(runsAgentplane)) {
      const env = literalEnv(c, objects, d.metadata.namespace);
      const module = modules.find((m) => m.name === env.get("SERVICES"));
      if (!module) continue; // reported by checkModules
      const internal = env.get("INTERNAL_GRPC_PORT");
      out.push({
        d,
        c,
        module,
        grpcPort: Number(env.get("GRPC_PORT") ?? 8081),
        internalPort: internal === undefined ? undefined : Number(internal),
      });
    }
  }
  return out;
}

/** The Services (same namespace) whose selector picks the workload's pods. */
function servicesOf(w: K8sObject, objects: readonly K8sObject[]): K8sObject[] {
  return objects.filter(
    (o) =>
      o.kind === "Service" && o.metadata.namespace === w.metadata.namespace && selects(o.spec?.selector, podLabels(w)),
  );
}

/** The container port number a Service port reaches on the container (undefined if none). */
function reachedPort(servicePort: Any, c: Any): number | undefined {
  const target = servicePort.targetPort ?? servicePort.port;
  return (c.ports ?? []).find((p: Any) => p.name === target || p.containerPort === target)?.containerPort;
}

/** Internal services listen on INTERNAL_GRPC_PORT, apart from GRPC_PORT; the container declares it and the Service exposes it exactly when the module has internal services. */
function checkModulePorts(objects: readonly K8sObject[], modules: readonly ModuleFacts[]): string[] {
  const problems: string[] = [];
  for (const { d, c, module, grpcPort, internalPort } of moduleContainers(objects, modules)) {
    const exposed = servicesOf(d, objects).flatMap((s) =>
      (s.spec?.ports ?? []).map((p: Any) => ({ s, p, to: reachedPort(p, c) })),
    );
    if (module.internalServices.length === 0) {
      for (const { s, p } of exposed.filter((e) => internalPort !== undefined && e.to === internalPort)) {
        problems.push(
          `${id(s)} port ${p.name ?? p.port}: exposes the internal gRPC port ${internalPort} of ${id(d)}, whose module ${module.name} serves no internal service`,
        );
      }
      continue;
    }
    if (internalPort === undefined) {
      problems.push(`${id(d)}: needs INTERNAL_GRPC_PORT (${module.name} serves ${module.internalServices.join(", ")})`);
      continue;
    }
    if (internalPort === grpcPort)
      problems.push(
        `${id(d)}: INTERNAL_GRPC_PORT and GRPC_PORT are both ${grpcPort}; the internal services need a port of their own`,
      );
    if (!(c.ports ?? []).some((p: Any) => p.containerPort === internalPort))
      problems.push(`${id(d)} ${c.name}: does not declare its internal gRPC port ${internalPort}`);
    else if (!exposed.some((e) => e.to === internalPort))
      problems.push(
        `${id(d)}: no Service exposes its internal gRPC port ${internalPort} (${module.internalServices.join(", ")})`,
      );
  }
  return problems;
}

/** Do the rule's peers all require the labels `required` (in the policy's own namespace unless `anyNamespace`)? */
function peersRequire(rule: Any, required: Record<string, string>, anyNamespace: boolean): boolean {
  const from: Any[] = rule.from ?? [];
  if (from.length === 0) return false; // every source
  return from.every(
    (peer) =>
      !peer.ipBlock &&
      (anyNamespace || !peer.namespaceSelector) &&
      Object.entries(required).every(([k, v]) => requiresLabel(peer.podSelector, k, v)),
  );
}

/** Rules of the policies selecting `pod` that admit something to `port`. */
function rulesAdmittingPort(
  policies: readonly K8sObject[],
  pod: Pod,
  port: number,
): { policy: K8sObject; index: number; rule: Any }[] {
  return ingressPoliciesOf(policies, pod).flatMap((policy) =>
    (policy.spec?.ingress ?? [])
      .map((rule: Any, index: number) => ({ policy, index, rule }))
      .filter(({ rule }: Any) => rulePortsCover(rule.ports, pod, port)),
  );
}

/** The Service and target pods a datastore URL (postgres://host:port, redis://host:port) names inside the namespace. */
function datastoreOf(
  url: string,
  objects: readonly K8sObject[],
  namespace: string | undefined,
): { svc: K8sObject; port: number; pods: K8sObject[] } | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  const svc = find(objects, "Service", parsed.hostname, namespace);
  if (!svc) return undefined; // outside the cluster (a managed service): no policy of ours applies
  const defaultPort = parsed.protocol.startsWith("redis") ? 6379 : 5432;
  const servicePort = (svc.spec?.ports ?? []).find((p: Any) => p.port === Number(parsed.port || defaultPort));
  const pods = objects.filter(
    (o) => WORKLOADS.has(o.kind) && o.metadata.namespace === namespace && selects(svc.spec?.selector, podLabels(o)),
  );
  const port =
    servicePort && pods.length > 0
      ? containers(pods[0]!)
          .map((c) => reachedPort(servicePort, c))
          .find((p) => p !== undefined)
      : undefined;
  return port === undefined ? undefined : { svc, port, pods };
}

/** The datastore URLs a workload's agentplane containers read from Secrets, by variable. */
function datastoreUrls(w: K8sObject, objects: readonly K8sObject[]): Map<string, string> {
  const urls = new Map<string, string>();
  for (const c of containers(w).filter(runsAgentplane)) {
    for (const e of c.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef;
      if (!ref || !["DATABASE_URL", "REDIS_URL"].includes(e.name)) continue;
      const value = find(objects, "Secret", ref.name, w.metadata.namespace)?.data?.[ref.key];
      if (value !== undefined) urls.set(e.name, Buffer.from(value, "base64").toString("utf8"));
    }
  }
  return urls;
}

/** NetworkPolicies: well-formed references, every pod isolated, and who reaches which port. */
function checkNetworkPolicies(objects: readonly K8sObject[], modules: readonly ModuleFacts[]): string[] {
  const problems: string[] = [];
  const policies = objects.filter((o) => o.kind === "NetworkPolicy");
  const workloads = objects.filter((o) => WORKLOADS.has(o.kind));

  for (const np of policies) {
    const where = id(np);
    if ((np.spec?.egress ?? []).length > 0) problems.push(`${where}: egress rules are not modelled by these checks`);
    const selected = workloads.filter(
      (w) =>
        w.metadata.namespace === np.metadata.namespace &&
        labelSelectorMatches(np.spec?.podSelector ?? {}, podLabels(w) ?? {}),
    );
    if (selected.length === 0) problems.push(`${where}: its podSelector matches no pod`);
    for (const [i, rule] of (np.spec?.ingress ?? []).entries()) {
      for (const p of rule.ports ?? []) {
        if (p.port === undefined) continue;
        for (const w of selected)
          if (resolvePort(p.port, podOf(w)) === undefined)
            problems.push(`${where} ingress[${i}]: port ${p.port} is not a port of ${id(w)}`);
      }
      for (const [j, peer] of (rule.from ?? []).entries()) {
        // A peer with a namespaceSelector names pods elsewhere (workloads), which this rendering does not hold.
        if (!peer.podSelector || peer.namespaceSelector) continue;
        const matched = workloads.some(
          (w) =>
            w.metadata.namespace === np.metadata.namespace &&
            labelSelectorMatches(peer.podSelector, podLabels(w) ?? {}),
        );
        if (!matched) problems.push(`${where} ingress[${i}].from[${j}]: its podSelector matches no pod`);
      }
    }
  }

  // Default deny: a pod no Ingress policy selects admits every connection.
  for (const w of workloads) {
    if (ingressPoliciesOf(policies, podOf(w)).length === 0)
      problems.push(`${id(w)}: no NetworkPolicy isolates its pods for ingress (want a default deny)`);
  }

  // The modules: the public port from Envoy only, the internal port from workload pods only.
  const envoy = objects.find(
    (o) => o.kind === "Deployment" && containers(o).some((c) => imageName(String(c.image)) === "envoyproxy/envoy"),
  );
  const envoyLabels = podLabels(envoy ?? ({} as K8sObject)) ?? {};
  const edge = {
    "app.kubernetes.io/name": envoyLabels["app.kubernetes.io/name"] ?? "",
    "app.kubernetes.io/component": envoyLabels["app.kubernetes.io/component"] ?? "",
  };
  for (const { d, module, grpcPort, internalPort } of moduleContainers(objects, modules)) {
    const pod = podOf(d);
    for (const { policy, index, rule } of rulesAdmittingPort(policies, pod, grpcPort)) {
      if (!envoy || !peersRequire(rule, edge, false))
        problems.push(
          `${id(policy)} ingress[${index}]: admits the public gRPC port ${grpcPort} of ${id(d)} from more than the Envoy pods`,
        );
    }
    if (internalPort === undefined || module.internalServices.length === 0) continue;
    for (const { policy, index, rule } of rulesAdmittingPort(policies, pod, internalPort)) {
      if (!peersRequire(rule, { [WORKLOAD_LABEL.key]: WORKLOAD_LABEL.value }, true)) {
        problems.push(
          `${id(policy)} ingress[${index}]: admits the internal gRPC port ${internalPort} of ${id(d)} from pods not labelled ${WORKLOAD_LABEL.key}=${WORKLOAD_LABEL.value}`,
        );
      }
    }
    if (!admits(policies, WORKLOAD_ELSEWHERE, pod, internalPort))
      problems.push(
        `${id(d)}: a pod labelled ${WORKLOAD_LABEL.key}=${WORKLOAD_LABEL.value} in another namespace cannot reach the internal gRPC port ${internalPort}`,
      );
  }

  // In-cluster datastores: exactly the agentplane pods whose DATABASE_URL / REDIS_URL name them.
  const agentplanePods = workloads.filter((w) => podLabels(w)?.["app.kubernetes.io/name"] === "agentplane");
  const stores = new Map<string, { svc: K8sObject; port: number; pods: K8sObject[] }>();
  for (const w of agentplanePods) {
    for (const url of datastoreUrls(w, objects).values()) {
      const store = datastoreOf(url, objects, w.metadata.namespace);
      if (store) stores.set(id(store.svc), store);
    }
  }
  for (const { svc, port, pods } of stores.values()) {
    for (const target of pods) {
      for (const { policy, index, rule } of rulesAdmittingPort(policies, podOf(target), port)) {
        if (!peersRequire(rule, { "app.kubernetes.io/name": "agentplane" }, false))
          problems.push(
            `${id(policy)} ingress[${index}]: admits port ${port} of ${id(target)} from pods other than agentplane's`,
          );
      }
      for (const w of agentplanePods) {
        const uses = [...datastoreUrls(w, objects).values()].some(
          (url) => datastoreOf(url, objects, w.metadata.namespace)?.svc === svc,
        );
        const admitted = admits(policies, podSource(w, objects), podOf(target), port);
        if (uses && !admitted)
          problems.push(`${id(w)}: uses ${id(svc)}, but ${id(target)} does not admit it on port ${port}`);
        if (!uses && admitted) problems.push(`${id(target)}: admits ${id(w)} on port ${port}, which it does not use`);
      }
    }
  }
  return problems;
}

/** Envoy: its ConfigMap holds the repository's files where envoy.yaml reads them; its clusters reach the module Services. */
function checkEnvoy(objects: readonly K8sObject[], modules: readonly ModuleFacts[], repo: RepositoryFiles): string[] {
  const problems: string[] = [];
  const envoys = objects.filter(
    (o) => o.kind === "Deployment" && containers(o).some((c) => imageName(String(c.image)) === "envoyproxy/envoy"),
  );
  if (envoys.length !== 1) return [`${envoys.length} Envoy Deployments (want one)`];
  const envoy = envoys[0]!;
  const ns = envoy.metadata.namespace;
  const container = containers(envoy).find((c) => imageName(String(c.image)) === "envoyproxy/envoy");
  const args: string[] = [...(container.command ?? []), ...(container.args ?? [])];
  const flag = args.findIndex((a) => a === "-c" || a === "--config-path");
  const configPath = flag === -1 ? undefined : args[flag + 1];
  if (!configPath) return [`${id(envoy)}: no --config-path`];

  /** The bytes a path in the Envoy container holds, from its ConfigMap volume mounts. */
  const fileAt = (file: string): Buffer | undefined => {
    for (const m of container.volumeMounts ?? []) {
      const rel = path.posix.relative(m.mountPath, file);
      if (rel.startsWith("..") || rel === "" || m.subPath) continue;
      const volume = (podSpec(envoy)?.volumes ?? []).find((v: Any) => v.name === m.name);
      const cm = volume?.configMap && find(objects, "ConfigMap", volume.configMap.name, ns);
      if (!cm) continue;
      const key = (volume.configMap.items ?? []).find((i: Any) => i.path === rel)?.key ?? rel;
      if (cm.data?.[key] !== undefined) return Buffer.from(cm.data[key]);
      if (cm.binaryData?.[key] !== undefined) return Buffer.from(cm.binaryData[key], "base64");
    }
    return undefined;
  };

  const mounted = fileAt(configPath);
  if (!mounted) return [`${id(envoy)}: ${configPath} is not provided by any ConfigMap mount`];
  if (mounted.toString("utf8") !== repo.envoyYaml)
    problems.push(`${id(envoy)}: ${configPath} differs from the repository's envoy.yaml`);
  const config = parseEnvoyYaml(mounted.toString("utf8"));
  const { descriptor, lua } = envoyFiles(config);
  const descriptorBytes = descriptor ? fileAt(descriptor) : undefined;
  if (!descriptorBytes)
    problems.push(`${id(envoy)}: the descriptor set ${descriptor} that envoy.yaml reads is not mounted`);
  else if (!descriptorBytes.equals(repo.descriptor))
    problems.push(`${id(envoy)}: ${descriptor} differs from deploy/envoy/api.binpb`);
  const luaBytes = lua ? fileAt(lua) : undefined;
  if (!luaBytes) problems.push(`${id(envoy)}: the Lua script ${lua} that envoy.yaml reads is not mounted`);
  else if (luaBytes.toString("utf8") !== repo.luaMapper)
    problems.push(`${id(envoy)}: ${lua} differs from deploy/envoy/error-mapper.lua`);

  // Every cluster endpoint is a Service of the module the cluster is named after, on a port that
  // reaches the module's public gRPC port and that the NetworkPolicies admit the Envoy pods to.
  const policies = objects.filter((o) => o.kind === "NetworkPolicy");
  for (const ep of clusterEndpoints(config)) {
    const where = `envoy cluster ${ep.cluster} (${ep.address}:${ep.port})`;
    const svc = find(objects, "Service", ep.address, ns);
    if (!svc) {
      problems.push(`${where}: no Service ${ep.address} in namespace ${ns}`);
      continue;
    }
    const port = (svc.spec?.ports ?? []).find((p: Any) => p.port === ep.port);
    if (!port) problems.push(`${where}: Service ${ep.address} has no port ${ep.port}`);
    if (svc.spec?.clusterIP !== "None")
      problems.push(`${where}: Service ${ep.address} must be headless, so Envoy sees every pod`);
    const module = modules.find((m) => m.name === ep.cluster);
    const backing = objects.filter(
      (o) => o.kind === "Deployment" && o.metadata.namespace === ns && selects(svc.spec?.selector, podLabels(o)),
    );
    for (const d of backing) {
      const services = containers(d)
        .map((c) => literalEnv(c, objects, ns).get("SERVICES"))
        .find((s) => s !== undefined);
      if (!module || services !== module.name)
        problems.push(
          `${where}: Service ${ep.address} selects ${id(d)} (SERVICES=${services}), not the ${ep.cluster} module`,
        );
      const target = port?.targetPort ?? port?.port;
      for (const c of containers(d).filter(runsAgentplane)) {
        const grpcPort = Number(literalEnv(c, objects, ns).get("GRPC_PORT") ?? 8081);
        const exposed = (c.ports ?? []).find((p: Any) => p.name === target || p.containerPort === target);
        if (port && exposed?.containerPort !== grpcPort)
          problems.push(
            `${where}: Service ${ep.address} port ${ep.port} does not reach the gRPC port ${grpcPort} of ${id(d)}`,
          );
        // Headless: DNS gives the pod IPs and Envoy dials them on the cluster's port, untranslated.
        if (exposed && exposed.containerPort !== ep.port)
          problems.push(
            `${where}: Envoy dials the pods of the headless Service ${ep.address} on ${ep.port}, but that Service port targets container port ${exposed.containerPort}`,
          );
        if (!admits(policies, podSource(envoy, objects), podOf(d), ep.port))
          problems.push(`${where}: no NetworkPolicy admits the Envoy pods to port ${ep.port} of ${id(d)}`);
      }
    }
  }
  return problems;
}
