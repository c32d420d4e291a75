// The NetworkPolicy model the deploy checks rely on (k8s-network.ts), on the cases of the API's
// semantics that a policy author gets wrong most often.
import { describe, expect, it } from "vitest";
import { admits, labelSelectorMatches, requiresLabel, type Pod, type Source } from "./k8s-network.js";
import type { K8sObject } from "./kustomize.js";

const NS = "app";
const server: Pod = {
  namespace: NS,
  labels: { role: "server" },
  ports: [
    { name: "api", containerPort: 8081 },
    { name: "admin", containerPort: 9000 },
  ],
};
const other: Pod = { namespace: NS, labels: { role: "other" }, ports: [{ name: "api", containerPort: 7000 }] };

function policy(name: string, spec: object): K8sObject {
  return { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", metadata: { name, namespace: NS }, spec };
}

function pod(namespace: string, labels: Record<string, string>, namespaceLabels: Record<string, string> = {}): Source {
  return {
    pod: { namespace, labels, namespaceLabels: { ...namespaceLabels, "kubernetes.io/metadata.name": namespace } },
  };
}

const DENY = policy("deny", { podSelector: {}, policyTypes: ["Ingress"] });

describe("NetworkPolicy ingress", () => {
  it("admits everything to a pod no policy selects, nothing to one a default deny selects", () => {
    expect(admits([], pod("x", {}), server, 8081)).toBe(true);
    expect(admits([DENY], pod(NS, { role: "server" }), server, 8081)).toBe(false);
    expect(admits([DENY], { ip: "198.51.100.1" }, server, 8081)).toBe(false);
  });

  it("an Egress-only policy does not isolate ingress", () => {
    expect(admits([policy("out", { podSelector: {}, policyTypes: ["Egress"] })], pod("x", {}), server, 8081)).toBe(
      true,
    );
  });

  it("one peer with both selectors is AND; two peers are OR", () => {
    const and = policy("and", {
      podSelector: {},
      ingress: [{ from: [{ namespaceSelector: {}, podSelector: { matchLabels: { w: "true" } } }] }],
    });
    const or = policy("or", {
      podSelector: {},
      ingress: [{ from: [{ namespaceSelector: {} }, { podSelector: { matchLabels: { w: "true" } } }] }],
    });
    expect(admits([and], pod("elsewhere", { w: "true" }), server, 8081)).toBe(true);
    expect(admits([and], pod("elsewhere", {}), server, 8081)).toBe(false);
    expect(admits([or], pod("elsewhere", {}), server, 8081)).toBe(true);
  });

  it("a podSelector without a namespaceSelector means the policy's own namespace", () => {
    const p = policy("same", {
      podSelector: {},
      ingress: [{ from: [{ podSelector: { matchLabels: { role: "edge" } } }] }],
    });
    expect(admits([p], pod(NS, { role: "edge" }), server, 8081)).toBe(true);
    expect(admits([p], pod("elsewhere", { role: "edge" }), server, 8081)).toBe(false);
  });

  it("a named port is the selected pod's own port of that name; protocol defaults to TCP", () => {
    const p = policy("named", { podSelector: {}, ingress: [{ ports: [{ port: "api" }] }] });
    expect(admits([p], pod("x", {}), server, 8081)).toBe(true);
    expect(admits([p], pod("x", {}), server, 9000)).toBe(false);
    expect(admits([p], pod("x", {}), other, 8081)).toBe(false);
    expect(admits([p], pod("x", {}), other, 7000)).toBe(true);
    expect(admits([p], pod("x", {}), server, 8081, "UDP")).toBe(false);
  });

  it("numbered ports and endPort ranges", () => {
    const p = policy("range", {
      podSelector: {},
      ingress: [{ ports: [{ port: 8000, endPort: 8100, protocol: "TCP" }] }],
    });
    expect(admits([p], pod("x", {}), server, 8081)).toBe(true);
    expect(admits([p], pod("x", {}), server, 9000)).toBe(false);
  });

  it("ipBlock with except matches addresses, never pods", () => {
    const p = policy("ip", {
      podSelector: {},
      ingress: [{ from: [{ ipBlock: { cidr: "10.0.0.0/8", except: ["10.1.0.0/16"] } }] }],
    });
    expect(admits([p], { ip: "10.2.3.4" }, server, 8081)).toBe(true);
    expect(admits([p], { ip: "10.1.3.4" }, server, 8081)).toBe(false);
    expect(admits([p], { ip: "192.0.2.1" }, server, 8081)).toBe(false);
    expect(admits([p], pod(NS, {}), server, 8081)).toBe(false);
  });

  it("policies add up, and only those selecting the pod count", () => {
    const toOther = policy("other", { podSelector: { matchLabels: { role: "other" } }, ingress: [{}] });
    expect(admits([DENY, toOther], pod("x", {}), server, 8081)).toBe(false);
    expect(admits([DENY, toOther], pod("x", {}), other, 7000)).toBe(true);
  });

  it("refuses egress rules rather than ignoring them", () => {
    const p = policy("egress", { podSelector: {}, egress: [{}] });
    expect(() => admits([p], pod("x", {}), server, 8081)).toThrow(/egress rules are not modelled/);
  });
});

describe("label selectors", () => {
  it("match labels and expressions; {} selects everything", () => {
    expect(labelSelectorMatches({}, {})).toBe(true);
    const sel = {
      matchLabels: { a: "1" },
      matchExpressions: [
        { key: "b", operator: "In", values: ["x", "y"] },
        { key: "c", operator: "DoesNotExist" },
      ],
    };
    expect(labelSelectorMatches(sel, { a: "1", b: "y" })).toBe(true);
    expect(labelSelectorMatches(sel, { a: "1", b: "z" })).toBe(false);
    expect(labelSelectorMatches(sel, { a: "1", b: "x", c: "" })).toBe(false);
    expect(labelSelectorMatches({ matchExpressions: [{ key: "b", operator: "NotIn", values: ["x"] }] }, {})).toBe(true);
  });

  it("requiresLabel: only when every matching label set carries the pair", () => {
    expect(requiresLabel({ matchLabels: { w: "true" } }, "w", "true")).toBe(true);
    expect(requiresLabel({ matchExpressions: [{ key: "w", operator: "In", values: ["true"] }] }, "w", "true")).toBe(
      true,
    );
    expect(
      requiresLabel({ matchExpressions: [{ key: "w", operator: "In", values: ["true", "yes"] }] }, "w", "true"),
    ).toBe(false);
    expect(requiresLabel({ matchExpressions: [{ key: "w", operator: "Exists" }] }, "w", "true")).toBe(false);
    expect(requiresLabel({}, "w", "true")).toBe(false);
    expect(requiresLabel(undefined, "w", "true")).toBe(false);
  });
});
