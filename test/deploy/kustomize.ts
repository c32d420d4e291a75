// A kustomize renderer for the tests: no kustomize implementation is published on the npm
// registry, so this composes kustomizations itself, following kustomize's semantics for the
// subset deploy/ uses, and refuses everything else by name (an unsupported field is an error,
// never silently skipped):
//   resources (files and directories), components (kind: Component), namespace, labels
//   (includeSelectors: false), images, configMapGenerator / secretGenerator (files, literals,
//   envs; behavior create / merge / replace; generatorOptions.disableNameSuffixHash), and
//   patches in JSON 6902 form with a target.
// Order as in kustomize (api/internal/target/kusttarget.go): resources, the kustomization's own
// generators, then its components, then its patches, namespace, labels, images; finally
// generated ConfigMaps and Secrets get their content-hash suffix and every reference to them in
// pod specs is renamed (kustomize's nameReference step). kustomize-real.test.ts compares the
// result with `kubectl kustomize`: equal but for the hash suffixes' values (see kustomizeHash).
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import YAML from "yaml";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [k: string]: unknown };
  [k: string]: any;
};

export interface RenderOptions {
  /** Content to use instead of a file on disk, by absolute path (e.g. a secrets file kept out of git). */
  readonly files?: ReadonlyMap<string, string | Buffer>;
  /** kustomize's --load-restrictor; the default, as kustomize's, is LoadRestrictionsRootOnly (what deploy/ needs). */
  readonly loadRestrictor?: "LoadRestrictionsRootOnly" | "LoadRestrictionsNone";
}

interface Resource {
  obj: K8sObject;
  /** Set on ConfigMaps and Secrets made by a generator. */
  generated?: { hash: boolean };
}

const KUSTOMIZATION_FIELDS = new Set([
  "apiVersion",
  "kind",
  "resources",
  "components",
  "namespace",
  "labels",
  "images",
  "configMapGenerator",
  "secretGenerator",
  "generatorOptions",
  "patches",
]);
const GENERATOR_FIELDS = new Set(["name", "behavior", "files", "literals", "envs", "options", "type"]);
const CLUSTER_SCOPED = new Set([
  "Namespace",
  "ClusterRole",
  "ClusterRoleBinding",
  "CustomResourceDefinition",
  "PersistentVolume",
  "StorageClass",
  "PriorityClass",
]);

export class KustomizeError extends Error {
  override name = "KustomizeError";
}

// ---------------------------------------------------------------------------------------------
// Reading files.

class Loader {
  constructor(private readonly options: RenderOptions) {}

  /** A file referenced from the kustomization in `dir`, honouring the load restrictor. */
  read(dir: string, file: string): Buffer {
    const full = path.resolve(dir, file);
    if (
      (this.options.loadRestrictor ?? "LoadRestrictionsRootOnly") === "LoadRestrictionsRootOnly" &&
      !full.startsWith(`${dir}${path.sep}`)
    ) {
      throw new KustomizeError(
        `security; file '${full}' is not in or below '${dir}' (kustomize's default load restrictor)`,
      );
    }
    const override = this.options.files?.get(full);
    if (override !== undefined) return Buffer.from(override);
    if (!existsSync(full))
      throw new KustomizeError(
        `${path.relative(process.cwd(), full)}: no such file (referenced from ${path.relative(process.cwd(), dir)})`,
      );
    return readFileSync(full);
  }

  text(dir: string, file: string): string {
    return this.read(dir, file).toString("utf8");
  }
}

function parseDocuments(text: string, where: string): K8sObject[] {
  const out: K8sObject[] = [];
  for (const doc of YAML.parseAllDocuments(text, { uniqueKeys: true, strict: true })) {
    if ("errors" in doc && doc.errors.length > 0) throw new KustomizeError(`${where}: ${doc.errors[0]!.message}`);
    const value = doc.toJS() as K8sObject | null;
    if (value === null || value === undefined) continue;
    if (typeof value.kind !== "string" || typeof value.metadata?.name !== "string") {
      throw new KustomizeError(`${where}: every document needs kind and metadata.name`);
    }
    out.push(value);
  }
  return out;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function readKustomization(dir: string, loader: Loader): any {
  const file = ["kustomization.yaml", "kustomization.yml", "Kustomization"].find((f) => existsSync(path.join(dir, f)));
  if (!file) throw new KustomizeError(`${dir}: no kustomization.yaml`);
  const k = YAML.parse(loader.text(dir, file), { uniqueKeys: true, strict: true });
  for (const key of Object.keys(k ?? {})) {
    if (!KUSTOMIZATION_FIELDS.has(key))
      throw new KustomizeError(`${path.join(dir, file)}: field "${key}" is not supported by this renderer`);
  }
  return k;
}

// ---------------------------------------------------------------------------------------------
// Generators.

function parseEnvFile(text: string, where: string): [string, string][] {
  const out: [string, string][] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) throw new KustomizeError(`${where}:${i + 1}: expected KEY=VALUE`);
    out.push([line.slice(0, eq), line.slice(eq + 1)]);
  }
  return out;
}

function isUtf8Text(b: Buffer): boolean {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(b);
  } catch {
    return false;
  }
  return !b.includes(0);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function generate(kind: "ConfigMap" | "Secret", g: any, dir: string, loader: Loader, defaults: any): Resource {
  for (const key of Object.keys(g))
    if (!GENERATOR_FIELDS.has(key))
      throw new KustomizeError(`${kind} generator ${g.name}: field "${key}" is not supported`);
  const data: Record<string, string> = {};
  const binaryData: Record<string, string> = {};
  const put = (key: string, value: Buffer, where: string) => {
    if (key in data || key in binaryData)
      throw new KustomizeError(`${kind} ${g.name}: key ${key} given twice (${where})`);
    if (kind === "Secret") data[key] = value.toString("base64");
    else if (isUtf8Text(value)) data[key] = value.toString("utf8");
    else binaryData[key] = value.toString("base64");
  };
  for (const lit of g.literals ?? []) {
    const eq = String(lit).indexOf("=");
    if (eq <= 0) throw new KustomizeError(`${kind} ${g.name}: literal ${lit} is not KEY=VALUE`);
    put(String(lit).slice(0, eq), Buffer.from(String(lit).slice(eq + 1)), "literals");
  }
  for (const env of g.envs ?? []) {
    for (const [k, v] of parseEnvFile(loader.text(dir, env), env)) put(k, Buffer.from(v), env);
  }
  for (const f of g.files ?? []) {
    const eq = String(f).indexOf("=");
    const [key, file] = eq === -1 ? [path.basename(f), f] : [String(f).slice(0, eq), String(f).slice(eq + 1)];
    put(key, loader.read(dir, file), file);
  }
  const options = { ...(defaults ?? {}), ...(g.options ?? {}) };
  const obj: K8sObject = { apiVersion: "v1", kind, metadata: { name: g.name } };
  if (kind === "Secret") obj.type = g.type ?? "Opaque";
  if (Object.keys(data).length > 0) obj.data = data;
  if (Object.keys(binaryData).length > 0) obj.binaryData = binaryData;
  if (options.labels) obj.metadata.labels = { ...options.labels };
  if (options.annotations) obj.metadata.annotations = { ...options.annotations };
  return { obj, generated: { hash: options.disableNameSuffixHash !== true } };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function applyGenerator(resources: Resource[], made: Resource, behavior: string | undefined, where: string): void {
  const { kind, metadata } = made.obj;
  const existing = resources.find((r) => r.obj.kind === kind && r.obj.metadata.name === metadata.name);
  switch (behavior ?? "create") {
    case "create":
      if (existing)
        throw new KustomizeError(`${where}: ${kind} ${metadata.name} already exists; use behavior: merge or replace`);
      resources.push(made);
      return;
    case "merge":
    case "replace": {
      if (!existing) throw new KustomizeError(`${where}: ${kind} ${metadata.name} does not exist to ${behavior}`);
      if (behavior === "merge") {
        for (const field of ["data", "binaryData"]) {
          if (made.obj[field]) existing.obj[field] = { ...(existing.obj[field] ?? {}), ...made.obj[field] };
        }
      } else {
        existing.obj.data = made.obj.data;
        existing.obj.binaryData = made.obj.binaryData;
      }
      return;
    }
    default:
      throw new KustomizeError(`${where}: unknown generator behavior ${behavior}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Transformers.

/** Pod specs of a workload (with the path to them), for images, labels and name references. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function podTemplates(obj: K8sObject): any[] {
  switch (obj.kind) {
    case "Deployment":
    case "StatefulSet":
    case "DaemonSet":
    case "ReplicaSet":
    case "Job":
      return obj.spec?.template ? [obj.spec.template] : [];
    case "CronJob":
      return obj.spec?.jobTemplate?.spec?.template ? [obj.spec.jobTemplate.spec.template] : [];
    default:
      return [];
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function containersOf(podSpec: any): any[] {
  return [...(podSpec?.initContainers ?? []), ...(podSpec?.containers ?? [])];
}

function decodePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new KustomizeError(`JSON pointer ${pointer} must start with /`);
  return pointer
    .slice(1)
    .split("/")
    .map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function applyJson6902(obj: any, ops: any[], where: string): void {
  for (const op of ops) {
    const parts = decodePointer(op.path);
    const last = parts.pop();
    if (last === undefined) throw new KustomizeError(`${where}: cannot ${op.op} the whole object`);
    let parent = obj;
    for (const p of parts) {
      parent = Array.isArray(parent) ? parent[Number(p)] : parent?.[p];
      if (parent === undefined || parent === null)
        throw new KustomizeError(`${where}: path ${op.path} does not exist (${op.op})`);
    }
    const isIndex = Array.isArray(parent);
    const exists = isIndex ? last === "-" || Number(last) < parent.length : Object.hasOwn(parent, last);
    switch (op.op) {
      case "add":
        if (isIndex) parent.splice(last === "-" ? parent.length : Number(last), 0, structuredClone(op.value));
        else parent[last] = structuredClone(op.value);
        break;
      case "replace":
        if (!exists || last === "-") throw new KustomizeError(`${where}: replace of missing ${op.path}`);
        parent[isIndex ? Number(last) : last] = structuredClone(op.value);
        break;
      case "remove":
        if (!exists || last === "-") throw new KustomizeError(`${where}: remove of missing ${op.path}`);
        if (isIndex) parent.splice(Number(last), 1);
        else delete parent[last];
        break;
      case "test":
        if (JSON.stringify(parent[isIndex ? Number(last) : last]) !== JSON.stringify(op.value))
          throw new KustomizeError(`${where}: test failed at ${op.path}`);
        break;
      default:
        throw new KustomizeError(`${where}: JSON patch op ${op.op} is not supported by this renderer`);
    }
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function targetMatches(target: any, obj: K8sObject): boolean {
  const known = new Set(["group", "version", "kind", "name", "namespace", "labelSelector"]);
  for (const key of Object.keys(target))
    if (!known.has(key)) throw new KustomizeError(`patch target field ${key} is not supported by this renderer`);
  const [group, version] = obj.apiVersion.includes("/") ? obj.apiVersion.split("/") : ["", obj.apiVersion];
  const anchored = (re: string, value: string | undefined) => new RegExp(`^(?:${re})$`).test(value ?? "");
  if (target.group !== undefined && target.group !== group) return false;
  if (target.version !== undefined && target.version !== version) return false;
  if (target.kind !== undefined && !anchored(target.kind, obj.kind)) return false;
  if (target.name !== undefined && !anchored(target.name, obj.metadata.name)) return false;
  if (target.namespace !== undefined && !anchored(target.namespace, obj.metadata.namespace)) return false;
  if (target.labelSelector !== undefined) {
    for (const term of String(target.labelSelector).split(",")) {
      const m = /^\s*([^=!\s]+)\s*=\s*([^\s]*)\s*$/.exec(term);
      if (!m)
        throw new KustomizeError(`labelSelector term "${term}" is not supported by this renderer (only key=value)`);
      if (obj.metadata.labels?.[m[1]!] !== m[2]) return false;
    }
  }
  return true;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function applyPatches(resources: Resource[], patches: any[], dir: string, loader: Loader): void {
  for (const [i, p] of patches.entries()) {
    const where = `${dir}: patches[${i}]`;
    for (const key of Object.keys(p))
      if (!["path", "patch", "target"].includes(key))
        throw new KustomizeError(`${where}: field ${key} is not supported`);
    const text = p.patch ?? loader.text(dir, p.path);
    const parsed = YAML.parse(text, { uniqueKeys: true, strict: true });
    if (!Array.isArray(parsed))
      throw new KustomizeError(
        `${where}: strategic-merge patches are not supported by this renderer; write a JSON 6902 patch`,
      );
    if (!p.target) throw new KustomizeError(`${where}: a JSON 6902 patch needs a target`);
    const matched = resources.filter((r) => targetMatches(p.target, r.obj));
    if (matched.length === 0)
      throw new KustomizeError(`${where}: target ${JSON.stringify(p.target)} matches no resource`);
    for (const r of matched) applyJson6902(r.obj, parsed, `${where} on ${r.obj.kind}/${r.obj.metadata.name}`);
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function applyLabels(resources: Resource[], labels: any[], where: string): void {
  for (const l of labels) {
    if (l.includeSelectors === true)
      throw new KustomizeError(`${where}: labels with includeSelectors are not supported by this renderer`);
    for (const r of resources) {
      r.obj.metadata.labels = { ...(r.obj.metadata.labels ?? {}), ...l.pairs };
      if (l.includeTemplates === true) {
        for (const t of podTemplates(r.obj))
          t.metadata = { ...(t.metadata ?? {}), labels: { ...(t.metadata?.labels ?? {}), ...l.pairs } };
      }
    }
  }
}

function splitImage(image: string): { name: string; tag?: string; digest?: string } {
  const at = image.indexOf("@");
  const digest = at === -1 ? undefined : image.slice(at + 1);
  const rest = at === -1 ? image : image.slice(0, at);
  const colon = rest.lastIndexOf(":");
  if (colon > rest.lastIndexOf("/")) return { name: rest.slice(0, colon), tag: rest.slice(colon + 1), digest };
  return { name: rest, digest };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function applyImages(resources: Resource[], images: any[]): void {
  for (const r of resources) {
    for (const t of podTemplates(r.obj)) {
      for (const c of containersOf(t.spec)) {
        const current = splitImage(String(c.image));
        const rule = images.find((i) => i.name === current.name);
        if (!rule) continue;
        const name = rule.newName ?? current.name;
        if (rule.digest) c.image = `${name}@${rule.digest}`;
        else {
          const tag = rule.newTag ?? current.tag;
          c.image = tag ? `${name}:${tag}` : name;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Hash suffixes and name references.

/** Go's encoding/json for a map[string]any: sorted keys, HTML characters escaped. */
function goJson(value: unknown): string {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${goJson(k)}:${goJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * A content hash of a generated ConfigMap or Secret in the form of kustomize's (api/hasher): ten
 * characters, changing with the content. Its value is not the one kubectl's kustomize writes
 * (checked with kubectl 1.27 to 1.33), so tests match the form, never a value.
 */
export function kustomizeHash(obj: K8sObject): string {
  const encoded: Record<string, unknown> = { kind: obj.kind, name: obj.metadata.name, data: obj.data ?? {} };
  if (obj.kind === "ConfigMap" && obj.binaryData && Object.keys(obj.binaryData).length > 0)
    encoded.binaryData = obj.binaryData;
  if (obj.kind === "Secret") encoded.type = obj.type;
  const hex = createHash("sha256").update(goJson(encoded)).digest("hex");
  const map: Record<string, string> = { "0": "g", "1": "h", "3": "k", a: "m", e: "t" };
  return [...hex.slice(0, 10)].map((c) => map[c] ?? c).join("");
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function renameReferences(podSpec: any, renamed: Map<string, string>): void {
  const ref = (kind: string, holder: any, field: string) => {
    // eslint-disable-line @typescript-eslint/no-explicit-any
    const to = holder?.[field] !== undefined ? renamed.get(`${kind}/${holder[field]}`) : undefined;
    if (to) holder[field] = to;
  };
  for (const v of podSpec?.volumes ?? []) {
    ref("ConfigMap", v.configMap, "name");
    ref("Secret", v.secret, "secretName");
    for (const s of v.projected?.sources ?? []) {
      ref("ConfigMap", s.configMap, "name");
      ref("Secret", s.secret, "name");
    }
  }
  for (const c of containersOf(podSpec)) {
    for (const e of c.env ?? []) {
      ref("ConfigMap", e.valueFrom?.configMapKeyRef, "name");
      ref("Secret", e.valueFrom?.secretKeyRef, "name");
    }
    for (const e of c.envFrom ?? []) {
      ref("ConfigMap", e.configMapRef, "name");
      ref("Secret", e.secretRef, "name");
    }
  }
  for (const s of podSpec?.imagePullSecrets ?? []) ref("Secret", s, "name");
}

// ---------------------------------------------------------------------------------------------
// Building.

function build(dir: string, loader: Loader, kind: "Kustomization" | "Component", accumulated: Resource[]): Resource[] {
  const k = readKustomization(dir, loader);
  const declared = k.kind ?? "Kustomization";
  if (declared !== kind) throw new KustomizeError(`${dir}: is a ${declared}, used as a ${kind}`);
  const resources = kind === "Component" ? accumulated : [];
  for (const entry of k.resources ?? []) {
    const full = path.resolve(dir, entry);
    if (existsSync(full) && statSync(full).isDirectory()) resources.push(...build(full, loader, "Kustomization", []));
    else for (const obj of parseDocuments(loader.text(dir, entry), path.join(dir, entry))) resources.push({ obj });
  }
  for (const g of k.configMapGenerator ?? [])
    applyGenerator(
      resources,
      generate("ConfigMap", g, dir, loader, k.generatorOptions),
      g.behavior,
      `${dir}: configMapGenerator ${g.name}`,
    );
  for (const g of k.secretGenerator ?? [])
    applyGenerator(
      resources,
      generate("Secret", g, dir, loader, k.generatorOptions),
      g.behavior,
      `${dir}: secretGenerator ${g.name}`,
    );
  // A component sees (and may merge into) what the generators above made.
  let all = resources;
  for (const c of k.components ?? []) all = build(path.resolve(dir, c), loader, "Component", all);
  if (k.patches) applyPatches(all, k.patches, dir, loader);
  if (k.namespace) for (const r of all) if (!CLUSTER_SCOPED.has(r.obj.kind)) r.obj.metadata.namespace = k.namespace;
  if (k.labels) applyLabels(all, k.labels, dir);
  if (k.images) applyImages(all, k.images);
  return all;
}

/** `kustomize build <dir>`: the rendered objects. */
export function kustomizeBuild(dir: string, options: RenderOptions = {}): K8sObject[] {
  const loader = new Loader(options);
  const resources = build(path.resolve(dir), loader, "Kustomization", []);
  const seen = new Set<string>();
  for (const r of resources) {
    const id = `${r.obj.kind}/${r.obj.metadata.namespace ?? ""}/${r.obj.metadata.name}`;
    if (seen.has(id)) throw new KustomizeError(`${id} is defined twice`);
    seen.add(id);
  }
  const renamed = new Map<string, string>();
  for (const r of resources) {
    if (!r.generated?.hash) continue;
    const name = `${r.obj.metadata.name}-${kustomizeHash(r.obj)}`;
    renamed.set(`${r.obj.kind}/${r.obj.metadata.name}`, name);
    r.obj.metadata.name = name;
  }
  for (const r of resources) for (const t of podTemplates(r.obj)) renameReferences(t.spec, renamed);
  return resources.map((r) => r.obj);
}
