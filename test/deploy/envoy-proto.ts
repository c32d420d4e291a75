// A strict reader of Envoy configuration, built from Envoy's own API protos (shipped in the
// @grpc/grpc-js-xds package under deps/), standing in for the Envoy binary we cannot install.
//
// Like Envoy's loader it maps the YAML, as JSON, onto envoy.config.bootstrap.v3.Bootstrap by the
// proto3 JSON rules, and rejects what Envoy rejects at start: unknown fields, values of the wrong
// type, unknown enum names, two members of one oneof, an `@type` that names no known message.
// It also rejects deprecated fields and checks the protoc-gen-validate rules that matter most for
// hand-written config (required messages and oneofs, string min_len, repeated min_items, numeric
// and duration bounds).
//
// protobufjs reads the .proto files: it keeps options it does not understand as plain data, so the
// PGV `validate.proto` shipped there, older than some option fields Envoy's protos use, does no
// harm — unknown *options* are tolerated while unknown *config fields* are errors.
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import protobuf from "protobufjs";

const require = createRequire(import.meta.url);
const DEPS = path.join(path.dirname(require.resolve("@grpc/grpc-js-xds/package.json")), "deps");
const PROTO_ROOTS = ["envoy-api", "xds", "googleapis", "protoc-gen-validate"].map((d) => path.join(DEPS, d));
const PROTOBUFJS_DIR = path.dirname(require.resolve("protobufjs/package.json"));

export const BOOTSTRAP_TYPE = "envoy.config.bootstrap.v3.Bootstrap";
const BOOTSTRAP_FILE = "envoy/config/bootstrap/v3/bootstrap.proto";
const TYPE_URL_PREFIX = "type.googleapis.com/";

// ---------------------------------------------------------------------------------------------
// Finding the .proto file that declares a message named by an `@type`.

let typeIndex: Map<string, string> | undefined;

function* protoFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* protoFiles(full);
    else if (entry.name.endsWith(".proto")) yield full;
  }
}

/** Top-level message name → its file (relative to its proto root), over every shipped proto. */
function messageIndex(): Map<string, string> {
  if (typeIndex) return typeIndex;
  typeIndex = new Map();
  for (const root of PROTO_ROOTS) {
    for (const file of protoFiles(root)) {
      const text = readFileSync(file, "utf8");
      const pkg = /^package\s+([\w.]+)\s*;/m.exec(text)?.[1];
      if (!pkg) continue;
      for (const m of text.matchAll(/^message\s+(\w+)/gm)) typeIndex.set(`${pkg}.${m[1]}`, path.relative(root, file));
    }
  }
  return typeIndex;
}

/** Every `@type` URL anywhere in a JSON tree. */
function typeUrls(value: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) typeUrls(v, out);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "@type" && typeof v === "string") out.add(v);
      else typeUrls(v, out);
    }
  }
  return out;
}

/** Loads the Bootstrap proto plus the protos of every `@type` the config names. */
export function loadEnvoyProtos(config: unknown): protobuf.Root {
  const files = new Set([BOOTSTRAP_FILE]);
  const index = messageIndex();
  for (const url of typeUrls(config)) {
    const file = index.get(url.startsWith(TYPE_URL_PREFIX) ? url.slice(TYPE_URL_PREFIX.length) : url);
    if (file) files.add(file); // an unknown one is reported by the checker, with its path
  }
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => {
    for (const dir of PROTO_ROOTS) {
      const candidate = path.join(dir, target);
      if (existsSync(candidate)) return candidate;
    }
    const bundled = path.join(PROTOBUFJS_DIR, target); // google/protobuf/descriptor.proto
    return existsSync(bundled) ? bundled : target;
  };
  root.loadSync([...files], { keepCase: true });
  root.resolveAll();
  return root;
}

// ---------------------------------------------------------------------------------------------
// The strict proto3 JSON check.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const WRAPPERS: Record<string, string> = {
  "google.protobuf.DoubleValue": "double",
  "google.protobuf.FloatValue": "float",
  "google.protobuf.Int64Value": "int64",
  "google.protobuf.UInt64Value": "uint64",
  "google.protobuf.Int32Value": "int32",
  "google.protobuf.UInt32Value": "uint32",
  "google.protobuf.BoolValue": "bool",
  "google.protobuf.StringValue": "string",
  "google.protobuf.BytesValue": "bytes",
};

const DURATION_RE = /^(-)?(\d+)(?:\.(\d{1,9}))?s$/;
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const INT_RE = /^-?\d+$/;
const BASE64_RE = /^(?:[A-Za-z0-9+/_-]{4})*(?:[A-Za-z0-9+/_-]{2}(?:==)?|[A-Za-z0-9+/_-]{3}=?)?$/;

interface Rules {
  [key: string]: unknown;
}

function typeName(t: protobuf.ReflectionObject): string {
  return t.fullName.replace(/^\./, "");
}

/** The (validate.rules) and other options of a field, merged from protobufjs' parsedOptions. */
function optionsOf(obj: protobuf.Field | protobuf.OneOf): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  for (const o of (obj.parsedOptions as Record<string, unknown>[] | undefined) ?? []) Object.assign(merged, o);
  return merged;
}

function jsonName(field: protobuf.Field): string {
  const explicit = (field.options as Record<string, unknown> | undefined)?.json_name;
  if (typeof explicit === "string") return explicit;
  return field.name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

function durationSeconds(text: string): number | undefined {
  const m = DURATION_RE.exec(text);
  if (!m) return undefined;
  const value = Number(m[2]) + Number(`0.${m[3] ?? "0"}`);
  return m[1] ? -value : value;
}

function ruleDuration(rule: unknown): number {
  const r = (rule ?? {}) as { seconds?: number | string; nanos?: number };
  return Number(r.seconds ?? 0) + Number(r.nanos ?? 0) / 1e9;
}

class Checker {
  readonly errors: string[] = [];
  constructor(private readonly root: protobuf.Root) {}

  private fail(where: string, problem: string): void {
    this.errors.push(`${where || "(root)"}: ${problem}`);
  }

  message(type: protobuf.Type, value: Json, where: string): void {
    const name = typeName(type);
    if (this.wellKnown(name, value, where)) return;
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      this.fail(where, `expected an object for ${name}`);
      return;
    }
    const byName = new Map<string, protobuf.Field>();
    for (const f of type.fieldsArray) {
      byName.set(f.name, f);
      byName.set(jsonName(f), f);
    }
    const seen = new Set<protobuf.Field>();
    const present = new Set<protobuf.Field>(); // given a non-null value
    for (const [key, v] of Object.entries(value)) {
      const at = where ? `${where}.${key}` : key;
      const field = byName.get(key);
      if (!field) {
        this.fail(at, `unknown field "${key}" in ${name}`);
        continue;
      }
      if (seen.has(field)) this.fail(at, `field ${field.name} given twice (proto and JSON names)`);
      seen.add(field);
      const options = optionsOf(field);
      if (options.deprecated === true) this.fail(at, `deprecated field ${field.name} of ${name}`);
      if (v === null) continue;
      present.add(field);
      this.field(field, v, at, options);
    }
    for (const oneof of type.oneofsArray) {
      const set = oneof.fieldsArray.filter((f) => present.has(f));
      if (set.length > 1)
        this.fail(
          where,
          `oneof ${oneof.name} of ${name} has more than one member: ${set.map((f) => f.name).join(", ")}`,
        );
      if (set.length === 0 && optionsOf(oneof)["(validate.required)"] === true) {
        this.fail(
          where,
          `oneof ${oneof.name} of ${name} requires one of: ${oneof.fieldsArray.map((f) => f.name).join(", ")}`,
        );
      }
    }
    for (const field of type.fieldsArray) {
      // A rule on a oneof member applies only when that member is the one chosen.
      if (present.has(field) || field.partOf) continue;
      const rules = optionsOf(field)["(validate.rules)"] as Rules | undefined;
      const required =
        (rules?.message as Rules | undefined)?.required ?? (rules?.duration as Rules | undefined)?.required;
      if (required === true)
        this.fail(where ? `${where}.${field.name}` : field.name, `required field of ${name} is missing`);
    }
  }

  private field(field: protobuf.Field, value: Json, where: string, options: Record<string, unknown>): void {
    const rules = options["(validate.rules)"] as Rules | undefined;
    if (field instanceof protobuf.MapField) {
      if (value === null || typeof value !== "object" || Array.isArray(value)) {
        this.fail(where, "expected an object (map)");
        return;
      }
      for (const [k, v] of Object.entries(value)) {
        if (field.keyType !== "string" && !INT_RE.test(k) && field.keyType !== "bool")
          this.fail(`${where}[${k}]`, `map key must be ${field.keyType}`);
        this.single(field, v, `${where}[${JSON.stringify(k)}]`, undefined);
      }
      return;
    }
    if (field.repeated) {
      if (!Array.isArray(value)) {
        this.fail(where, "expected a list");
        return;
      }
      const min = (rules?.repeated as Rules | undefined)?.min_items;
      if (typeof min === "number" && value.length < min) this.fail(where, `needs at least ${min} item(s)`);
      const itemRules = (rules?.repeated as Rules | undefined)?.items as Rules | undefined;
      for (const [i, v] of value.entries()) {
        if (v === null) this.fail(`${where}[${i}]`, "null in a list");
        else this.single(field, v, `${where}[${i}]`, itemRules);
      }
      return;
    }
    this.single(field, value, where, rules);
  }

  private single(field: protobuf.Field, value: Json, where: string, rules: Rules | undefined): void {
    const resolved = field.resolvedType;
    if (resolved instanceof protobuf.Type) {
      this.message(resolved, value, where);
      this.messageRules(typeName(resolved), value, where, rules);
      return;
    }
    if (resolved instanceof protobuf.Enum) {
      this.enumValue(resolved, value, where);
      return;
    }
    this.scalar(field.type, value, where, rules);
  }

  private enumValue(type: protobuf.Enum, value: Json, where: string): void {
    if (typeof value === "string") {
      if (!(value in type.values)) this.fail(where, `unknown value "${value}" of enum ${typeName(type)}`);
    } else if (typeof value !== "number" || !Number.isInteger(value)) {
      this.fail(where, `expected a name of enum ${typeName(type)}`);
    }
  }

  private scalar(kind: string, value: Json, where: string, rules: Rules | undefined): void {
    const r = rules?.[kind] as Rules | undefined;
    switch (kind) {
      case "string": {
        if (typeof value !== "string") {
          this.fail(where, "expected a string");
          return;
        }
        const min = r?.min_len;
        if (typeof min === "number" && value.length < min) this.fail(where, `must be at least ${min} character(s)`);
        return;
      }
      case "bool":
        if (typeof value !== "boolean") this.fail(where, "expected true or false");
        return;
      case "bytes":
        if (typeof value !== "string" || !BASE64_RE.test(value)) this.fail(where, "expected base64 bytes");
        return;
      case "double":
      case "float":
        if (
          typeof value === "number" ||
          (typeof value === "string" &&
            (value === "NaN" || value === "Infinity" || value === "-Infinity" || Number.isFinite(Number(value))))
        ) {
          this.bounds(Number(value), where, r);
        } else this.fail(where, `expected a number (${kind})`);
        return;
      default: {
        // int32, uint32, sint32, fixed32, sfixed32 and their 64-bit kinds
        const n =
          typeof value === "number" ? value : typeof value === "string" && INT_RE.test(value) ? Number(value) : NaN;
        if (!Number.isInteger(n)) {
          this.fail(where, `expected an integer (${kind})`);
          return;
        }
        if (kind.startsWith("u") || kind.startsWith("fixed")) {
          if (n < 0) this.fail(where, `must not be negative (${kind})`);
        }
        if (kind.endsWith("32") && Math.abs(n) > 0xffffffff) this.fail(where, `out of range for ${kind}`);
        this.bounds(n, where, r);
      }
    }
  }

  private bounds(n: number, where: string, r: Rules | undefined): void {
    if (!r) return;
    if (typeof r.gt === "number" && !(n > r.gt)) this.fail(where, `must be > ${r.gt}`);
    if (typeof r.gte === "number" && !(n >= r.gte)) this.fail(where, `must be >= ${r.gte}`);
    if (typeof r.lt === "number" && !(n < r.lt)) this.fail(where, `must be < ${r.lt}`);
    if (typeof r.lte === "number" && !(n <= r.lte)) this.fail(where, `must be <= ${r.lte}`);
  }

  /** PGV rules written on a message-typed field: wrappers and durations. */
  private messageRules(name: string, value: Json, where: string, rules: Rules | undefined): void {
    if (!rules) return;
    const wrapped = WRAPPERS[name];
    if (wrapped && typeof value !== "object") this.bounds(Number(value), where, rules[wrapped] as Rules | undefined);
    if (name === "google.protobuf.Duration" && typeof value === "string") {
      const seconds = durationSeconds(value);
      const r = rules.duration as Rules | undefined;
      if (seconds === undefined || !r) return;
      if ("gt" in r && !(seconds > ruleDuration(r.gt))) this.fail(where, `must be longer than ${ruleDuration(r.gt)}s`);
      if ("gte" in r && !(seconds >= ruleDuration(r.gte))) this.fail(where, `must be at least ${ruleDuration(r.gte)}s`);
      if ("lt" in r && !(seconds < ruleDuration(r.lt))) this.fail(where, `must be shorter than ${ruleDuration(r.lt)}s`);
    }
  }

  /** Well-known types with a special JSON form. True when `name` is one of them. */
  private wellKnown(name: string, value: Json, where: string): boolean {
    const wrapped = WRAPPERS[name];
    if (wrapped) {
      this.scalar(wrapped, value, where, undefined);
      return true;
    }
    switch (name) {
      case "google.protobuf.Duration":
        if (typeof value !== "string" || durationSeconds(value) === undefined)
          this.fail(where, `expected a duration such as "1.5s", got ${JSON.stringify(value)}`);
        return true;
      case "google.protobuf.Timestamp":
        if (typeof value !== "string" || !TIMESTAMP_RE.test(value)) this.fail(where, "expected an RFC 3339 timestamp");
        return true;
      case "google.protobuf.FieldMask":
        if (typeof value !== "string") this.fail(where, "expected a field mask string");
        return true;
      case "google.protobuf.Struct":
        if (value === null || typeof value !== "object" || Array.isArray(value))
          this.fail(where, "expected an object (Struct)");
        return true;
      case "google.protobuf.ListValue":
        if (!Array.isArray(value)) this.fail(where, "expected a list (ListValue)");
        return true;
      case "google.protobuf.Value":
        return true;
      case "google.protobuf.Empty":
        if (value === null || typeof value !== "object" || Array.isArray(value) || Object.keys(value).length > 0)
          this.fail(where, "expected {}");
        return true;
      case "google.protobuf.Any":
        this.any(value, where);
        return true;
      default:
        return false;
    }
  }

  private any(value: Json, where: string): void {
    if (value === null || typeof value !== "object" || Array.isArray(value)) {
      this.fail(where, "expected an object with @type");
      return;
    }
    const url = value["@type"];
    if (typeof url !== "string") {
      this.fail(where, "missing @type");
      return;
    }
    const name = url.slice(url.lastIndexOf("/") + 1);
    let type: protobuf.Type;
    try {
      type = this.root.lookupType(name);
    } catch {
      this.fail(`${where}.@type`, `unknown type ${url}`);
      return;
    }
    const rest = Object.fromEntries(Object.entries(value).filter(([k]) => k !== "@type"));
    const special = WRAPPERS[name] !== undefined || name.startsWith("google.protobuf.");
    if (special) {
      // {"@type": ".../google.protobuf.Duration", "value": "1s"}
      this.message(type, (rest as { value?: Json }).value ?? null, `${where}.value`);
    } else {
      this.message(type, rest, where);
    }
  }
}

export interface EnvoyCheckResult {
  readonly errors: readonly string[];
  readonly root: protobuf.Root;
}

/** Checks a configuration (YAML already parsed to JSON) against envoy.config.bootstrap.v3.Bootstrap. */
export function checkEnvoyConfig(config: unknown): EnvoyCheckResult {
  const root = loadEnvoyProtos(config);
  const checker = new Checker(root);
  checker.message(root.lookupType(BOOTSTRAP_TYPE), config as Json, "");
  return { errors: checker.errors, root };
}
