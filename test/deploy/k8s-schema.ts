// Validating rendered Kubernetes objects against the API schemas, as the API server would:
//   1. kubernetes-models' JSON-schema validators (types, enums, required fields, formats);
//   2. unknown fields, which those validators let through: every key is looked up in the
//      model's TypeScript declaration of the same API version (via the TypeScript compiler's
//      type checker), so a misspelled field such as readOnlyRootFileSystem is reported with its path.
import path from "node:path";
import ts from "typescript";
import type { K8sObject } from "./kustomize.js";

function modelPath(apiVersion: string): string {
  // "apps/v1" → kubernetes-models/apps/v1, "v1" → kubernetes-models/v1
  return `kubernetes-models/${apiVersion}`;
}

interface ValidatingModel {
  validate(): void;
}

/** Schema errors from kubernetes-models, one line per object. */
export async function schemaErrors(objects: readonly K8sObject[]): Promise<string[]> {
  const errors: string[] = [];
  for (const obj of objects) {
    const id = `${obj.kind}/${obj.metadata?.name}`;
    let mod: Record<string, new (data: unknown) => ValidatingModel>;
    try {
      mod = (await import(modelPath(obj.apiVersion))) as typeof mod;
    } catch {
      errors.push(`${id}: unknown apiVersion ${obj.apiVersion}`);
      continue;
    }
    const Model = mod[obj.kind];
    if (typeof Model !== "function") {
      errors.push(`${id}: ${obj.apiVersion} has no kind ${obj.kind}`);
      continue;
    }
    try {
      new Model(obj).validate();
    } catch (e) {
      errors.push(`${id}: ${(e as Error).message}`);
    }
  }
  return errors;
}

// ---------------------------------------------------------------------------------------------
// Unknown fields.

const VIRTUAL_FILE = path.resolve(path.dirname(new URL(import.meta.url).pathname), "__k8s_model_types__.ts");

function kindKey(obj: K8sObject): string {
  return `${obj.apiVersion} ${obj.kind}`;
}

class FieldWalker {
  readonly errors: string[] = [];
  constructor(private readonly checker: ts.TypeChecker) {}

  private withoutNullish(type: ts.Type): ts.Type[] {
    const parts = type.isUnion() ? type.types : [type];
    return parts.filter((t) => !(t.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Null)));
  }

  private elementType(type: ts.Type): ts.Type | undefined {
    for (const t of this.withoutNullish(type)) {
      const name = t.getSymbol()?.getName();
      if ((name === "Array" || name === "ReadonlyArray") && (t as ts.TypeReference).target) {
        return this.checker.getTypeArguments(t as ts.TypeReference)[0];
      }
    }
    return undefined;
  }

  walk(value: unknown, type: ts.Type, where: string): void {
    if (Array.isArray(value)) {
      const element = this.elementType(type);
      if (element) for (const [i, v] of value.entries()) this.walk(v, element, `${where}[${i}]`);
      return;
    }
    if (value === null || typeof value !== "object") return; // scalars: the schema validators check them
    const candidates = this.withoutNullish(type).filter(
      (t) => t.flags & ts.TypeFlags.Object && this.elementType(t) === undefined,
    );
    if (candidates.length === 0) return;
    // The first object type that knows every key, else the first one (for the error message).
    const fits = (t: ts.Type) =>
      Object.keys(value).every((k) => t.getProperty(k) || this.checker.getIndexInfoOfType(t, ts.IndexKind.String));
    const chosen = candidates.find(fits) ?? candidates[0]!;
    const index = this.checker.getIndexInfoOfType(chosen, ts.IndexKind.String);
    for (const [key, v] of Object.entries(value)) {
      const at = where ? `${where}.${key}` : key;
      const prop = chosen.getProperty(key);
      if (prop) this.walk(v, this.checker.getTypeOfSymbol(prop), at);
      else if (index) this.walk(v, index.type, at);
      else this.errors.push(`${at}: unknown field "${key}"`);
    }
  }
}

/** Fields no API schema of the object's kind defines, as "Kind/name: path: unknown field" lines. */
export function unknownFieldErrors(objects: readonly K8sObject[]): string[] {
  const kinds = [...new Map(objects.map((o) => [kindKey(o), o])).values()];
  const lines = kinds.map(
    (o, i) =>
      `import type { I${o.kind} as T${i} } from "${modelPath(o.apiVersion)}";\nexport declare const t${i}: T${i};`,
  );
  const source = lines.join("\n");
  const { checker, typeOf } = modelTypes(source, kinds);
  const errors: string[] = [];
  for (const obj of objects) {
    const walker = new FieldWalker(checker);
    walker.walk(obj, typeOf(kindKey(obj)), "");
    errors.push(...walker.errors.map((e) => `${obj.kind}/${obj.metadata?.name}: ${e}`));
  }
  return errors;
}

interface ModelTypes {
  readonly checker: ts.TypeChecker;
  typeOf(kind: string): ts.Type;
}

// Building the program costs seconds; the same set of kinds is checked many times.
const programs = new Map<string, ModelTypes>();

function modelTypes(source: string, kinds: readonly K8sObject[]): ModelTypes {
  const cached = programs.get(source);
  if (cached) return cached;
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.getSourceFile = (file, lang, ...rest) =>
    path.resolve(file) === VIRTUAL_FILE ? ts.createSourceFile(file, source, lang) : getSourceFile(file, lang, ...rest);
  host.fileExists = (file) => path.resolve(file) === VIRTUAL_FILE || fileExists(file);
  const program = ts.createProgram([VIRTUAL_FILE], options, host);
  const checker = program.getTypeChecker();
  const file = program.getSourceFile(VIRTUAL_FILE)!;
  const problems = ts
    .getPreEmitDiagnostics(program, file)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, " "));
  // An unknown apiVersion or kind: schemaErrors names it; here it would only hide every other error.
  if (problems.length > 0) throw new Error(`kubernetes-models has no type for some kind: ${problems.join("; ")}`);
  const typeByKind = new Map<string, ts.Type>();
  const moduleSymbol = checker.getSymbolAtLocation(file)!;
  for (const [i, o] of kinds.entries()) {
    const symbol = checker.getExportsOfModule(moduleSymbol).find((s) => s.getName() === `t${i}`)!;
    typeByKind.set(kindKey(o), checker.getTypeOfSymbol(symbol));
  }
  const types: ModelTypes = { checker, typeOf: (kind) => typeByKind.get(kind)! };
  programs.set(source, types);
  return types;
}
