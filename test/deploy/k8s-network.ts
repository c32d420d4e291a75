// NetworkPolicy ingress as the API defines it (networking.k8s.io/v1), for checking rendered
// manifests without a cluster: which policies isolate a pod, and whether a connection from a
// source to a pod's port is admitted. Policies add up; a pod no Ingress policy selects admits
// everything. Not modelled, and refused by name rather than guessed: egress rules, and the
// node's own traffic (always admitted, kubelet probes included; the callers leave it out).
import type { K8sObject } from "./kustomize.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;
export type Labels = Readonly<Record<string, string>>;

export interface ContainerPort {
  readonly name?: string;
  readonly containerPort: number;
  readonly protocol?: string;
}

/** A pod as a policy sees it: where it runs, its labels, its containers' declared ports. */
export interface Pod {
  readonly namespace: string;
  readonly labels: Labels;
  readonly ports: readonly ContainerPort[];
}

/** Who opens the connection: a pod (with its namespace's labels) or an address outside the cluster's pods. */
export type Source =
  | { readonly pod: { readonly namespace: string; readonly namespaceLabels: Labels; readonly labels: Labels } }
  | { readonly ip: string };

/** metav1.LabelSelector: every matchLabels pair and every expression hold; {} selects everything. */
export function labelSelectorMatches(selector: Any, labels: Labels): boolean {
  if (!selector) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    switch (e.operator) {
      case "In":
        if (!has || !(e.values ?? []).includes(labels[e.key])) return false;
        break;
      case "NotIn":
        if (has && (e.values ?? []).includes(labels[e.key])) return false;
        break;
      case "Exists":
        if (!has) return false;
        break;
      case "DoesNotExist":
        if (has) return false;
        break;
      default:
        throw new Error(`label selector operator ${e.operator} is not modelled`);
    }
  }
  return true;
}

/** Does every label set the selector matches carry key=value? (A selector can require a label.) */
export function requiresLabel(selector: Any, key: string, value: string): boolean {
  if (!selector) return false;
  if (selector.matchLabels?.[key] === value) return true;
  return (selector.matchExpressions ?? []).some(
    (e: Any) => e.key === key && e.operator === "In" && e.values?.length === 1 && e.values[0] === value,
  );
}

export function policyTypes(policy: K8sObject): string[] {
  const declared: string[] | undefined = policy.spec?.policyTypes;
  if (declared && declared.length > 0) return declared;
  // The API's default: Ingress always, Egress when egress rules are given.
  return policy.spec?.egress ? ["Ingress", "Egress"] : ["Ingress"];
}

/** Ingress policies that select the pod (same namespace, podSelector matches). */
export function ingressPoliciesOf(policies: readonly K8sObject[], pod: Pod): K8sObject[] {
  return policies.filter(
    (p) =>
      p.metadata.namespace === pod.namespace &&
      policyTypes(p).includes("Ingress") &&
      labelSelectorMatches(p.spec?.podSelector ?? {}, pod.labels),
  );
}

/** The pod's port number a NetworkPolicyPort names (a number, or a container port's name); undefined if it has none. */
export function resolvePort(port: Any, pod: Pod): number | undefined {
  if (typeof port === "number") return pod.ports.some((p) => p.containerPort === port) ? port : undefined;
  return pod.ports.find((p) => p.name === port)?.containerPort;
}

/** Does the rule's port list cover this port and protocol of the pod? (No list: every port.) */
export function rulePortsCover(ports: readonly Any[] | undefined, pod: Pod, port: number, protocol = "TCP"): boolean {
  if (!ports || ports.length === 0) return true;
  return ports.some((p) => {
    if ((p.protocol ?? "TCP") !== protocol) return false;
    if (p.port === undefined) return true;
    if (typeof p.port === "string")
      return pod.ports.some((c) => c.name === p.port && c.containerPort === port && (c.protocol ?? "TCP") === protocol);
    return p.endPort !== undefined ? port >= p.port && port <= p.endPort : port === p.port;
  });
}

function ipv4(ip: string): number {
  const parts = ip.split(".").map(Number);
  if (parts.length !== 4 || parts.some((n) => !Number.isInteger(n) || n < 0 || n > 255))
    throw new Error(`${ip} is not an IPv4 address (only IPv4 is modelled)`);
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

function inCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split("/");
  const n = Number(bits);
  const mask = n === 0 ? 0 : (~0 << (32 - n)) >>> 0;
  return (ipv4(ip) & mask) === (ipv4(base!) & mask);
}

/** Does one `from` peer of a policy in `namespace` match the source? */
export function peerMatches(peer: Any, namespace: string, source: Source): boolean {
  if (peer.ipBlock) {
    // Pod IPs are ephemeral; the API means ipBlock for addresses outside the cluster's pods.
    if (!("ip" in source)) return false;
    return (
      inCidr(source.ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((c: string) => inCidr(source.ip, c))
    );
  }
  if (!("pod" in source)) return false;
  const { pod } = source;
  const namespaceOk = peer.namespaceSelector
    ? labelSelectorMatches(peer.namespaceSelector, pod.namespaceLabels)
    : pod.namespace === namespace;
  const podOk = peer.podSelector ? labelSelectorMatches(peer.podSelector, pod.labels) : true;
  return namespaceOk && podOk;
}

/** Is a TCP connection from `source` to `port` of `pod` admitted by the policies? */
export function admits(
  policies: readonly K8sObject[],
  source: Source,
  pod: Pod,
  port: number,
  protocol = "TCP",
): boolean {
  for (const p of policies) {
    if (p.spec?.egress?.length) throw new Error(`NetworkPolicy/${p.metadata.name}: egress rules are not modelled`);
  }
  const selecting = ingressPoliciesOf(policies, pod);
  if (selecting.length === 0) return true;
  return selecting.some((p) =>
    (p.spec?.ingress ?? []).some((rule: Any) => {
      if (!rulePortsCover(rule.ports, pod, port, protocol)) return false;
      const from: Any[] = rule.from ?? [];
      return from.length === 0 || from.some((peer) => peerMatches(peer, p.metadata.namespace!, source));
    }),
  );
}

/** The labels a namespace has in a cluster: its own plus kubernetes.io/metadata.name, which the API server sets. */
export function namespaceLabels(objects: readonly K8sObject[], namespace: string): Labels {
  const ns = objects.find((o) => o.kind === "Namespace" && o.metadata.name === namespace);
  return { ...(ns?.metadata.labels ?? {}), "kubernetes.io/metadata.name": namespace };
}

/** A workload's pods (its pod template) as a policy sees them. */
export function podOf(w: K8sObject): Pod {
  const spec = w.spec?.template?.spec;
  const containers: Any[] = [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])];
  return {
    namespace: w.metadata.namespace ?? "",
    labels: w.spec?.template?.metadata?.labels ?? {},
    ports: containers.flatMap((c) => c.ports ?? []),
  };
}

/** A workload's pods as the source of a connection; `objects` holds its Namespace, if rendered. */
export function podSource(w: K8sObject, objects: readonly K8sObject[]): Source {
  const namespace = w.metadata.namespace ?? "";
  return {
    pod: {
      namespace,
      namespaceLabels: namespaceLabels(objects, namespace),
      labels: w.spec?.template?.metadata?.labels ?? {},
    },
  };
}
