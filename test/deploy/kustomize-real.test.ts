// Every overlay under deploy/overlays, rendered by the real kustomize (`kubectl kustomize`, with
// kustomize's default load restrictor and no flag), as the README tells an operator to apply it.
// The rendered objects are validated against the Kubernetes schemas (k8s-schema.ts) and compared
// with what the test's own renderer (kustomize.ts) makes of the same overlay, so the model the
// other deploy tests check is the real rendering.
//
// Skipped, saying so, when kubectl is not on PATH (.ci/run installs it where apt can).
// `kubectl apply -k --dry-run=client` is not run: even with --validate=false it asks an API
// server for the kinds.
import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaErrors, unknownFieldErrors } from "./k8s-schema.js";
import { type K8sObject, kustomizeBuild } from "./kustomize.js";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const OVERLAYS = readdirSync(path.join(REPO, "deploy/overlays"), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();
const KUBECTL = spawnSync("kubectl", ["version", "--client"], { encoding: "utf8" }).status === 0;
const SECRETS = "secrets.env";

if (!KUBECTL)
  console.warn("kustomize-real.test.ts: skipped, kubectl is not on PATH (.ci/run installs it where apt can)");

describe.skipIf(!KUBECTL)("deploy/overlays rendered by the real kustomize (kubectl kustomize)", () => {
  // A copy of deploy/ alone: it must render without anything outside it, and an overlay's
  // uncommitted secrets file comes from its committed example, never from a developer's own.
  let copy: string;
  beforeAll(() => {
    copy = mkdtempSync(path.join(tmpdir(), "agentplane-kustomize-"));
    cpSync(path.join(REPO, "deploy"), path.join(copy, "deploy"), { recursive: true });
    for (const overlay of OVERLAYS) {
      const dir = path.join(copy, "deploy/overlays", overlay);
      rmSync(path.join(dir, SECRETS), { force: true });
      if (existsSync(path.join(dir, `${SECRETS}.example`)))
        writeFileSync(path.join(dir, SECRETS), readFileSync(path.join(dir, `${SECRETS}.example`)));
    }
  });
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  function kubectlKustomize(overlay: string): K8sObject[] {
    const out = execFileSync("kubectl", ["kustomize", path.join(copy, "deploy/overlays", overlay)], {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    });
    return YAML.parseAllDocuments(out).map((d) => d.toJS() as K8sObject);
  }

  it("finds the overlays", () => {
    expect(OVERLAYS).toEqual(expect.arrayContaining(["local", "production"]));
  });

  describe.each(OVERLAYS)("overlay %s", (overlay) => {
    let objects: K8sObject[];
    beforeAll(() => {
      objects = kubectlKustomize(overlay);
    });

    it("renders with no flag, into objects that validate against the Kubernetes schemas", async () => {
      expect(objects.length).toBeGreaterThan(20);
      expect(await schemaErrors(unwrapBase64(objects))).toEqual([]);
      expect(unknownFieldErrors(objects)).toEqual([]);
    });

    it("is what the tests' renderer (kustomize.ts) makes of it, up to the hash suffixes", () => {
      const model = kustomizeBuild(path.join(copy, "deploy/overlays", overlay));
      expect(comparable(objects)).toEqual(comparable(model));
    });
  });
});

/**
 * The objects with the line breaks kustomize writes into long base64 values (Secret data,
 * ConfigMap binaryData) taken out. The API server's base64 decoder (Go's encoding/base64) skips
 * them; the schemas' "byte" format does not, and the tests' renderer writes none.
 */
function unwrapBase64(objects: readonly K8sObject[]): K8sObject[] {
  const unwrap = (map: Record<string, string> | undefined) =>
    map && Object.fromEntries(Object.entries(map).map(([k, v]) => [k, v.replace(/[\r\n]/g, "")]));
  return objects.map((o) => {
    const copy = structuredClone(o);
    if (copy.kind === "Secret" && copy.data) copy.data = unwrap(copy.data);
    if (copy.binaryData) copy.binaryData = unwrap(copy.binaryData);
    return copy;
  });
}

/**
 * Rendered objects in a form two renderers can agree on: base64 unwrapped, sorted by kind,
 * namespace and name, and a generated ConfigMap's or Secret's hash suffix replaced by "-HASH"
 * wherever the name appears (kustomize.ts computes a content hash of the same form, but not the
 * value kubectl's kustomize writes).
 */
function comparable(objects: readonly K8sObject[]): unknown[] {
  const renamed = new Map<string, string>();
  for (const o of objects) {
    const m = /^(.+)-[a-z0-9]{10}$/.exec(o.metadata.name);
    if ((o.kind === "ConfigMap" || o.kind === "Secret") && m) renamed.set(o.metadata.name, `${m[1]}-HASH`);
  }
  const rename = (v: unknown): unknown => {
    if (typeof v === "string") return renamed.get(v) ?? v;
    if (Array.isArray(v)) return v.map(rename);
    if (v !== null && typeof v === "object")
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, rename(x)]));
    return v;
  };
  return unwrapBase64(objects)
    .map((o) => rename(o) as K8sObject)
    .sort((a, b) => id(a).localeCompare(id(b)));
}

function id(o: K8sObject): string {
  return `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
}
