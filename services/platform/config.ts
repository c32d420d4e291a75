// Configuration comes only from the environment, is validated once at start and then frozen. An
// invalid value stops the process with one line naming the variable (docs/configuration.md). This
// file reads the platform's own settings; each module reads its own section
// (ServiceModule.settings), and services/config.ts puts them together.

import { parseRedisUrl, RedisUrlError } from "./redis-url.js";
import { COUNTED_FROM_BYTES, defaultRequestMemoryBytes } from "./request-memory.js";

export const MODULE_NAMES = ["analytics", "readiness", "sessions", "computers", "organization", "web", "edge"] as const;
export type ModuleName = (typeof MODULE_NAMES)[number];

/** Each service module's own section of the configuration, by module name (ServiceModule.settings). */
export type ModuleSettings = Readonly<Partial<Record<Exclude<ModuleName, "edge">, unknown>>>;

/** The whole configuration: the platform's settings and every module's section (services/config.ts). */
export interface Config extends PlatformConfig {
  readonly modules: ModuleSettings;
}

export interface PlatformConfig {
  readonly port: number;
  /** GRPC_PORT, default 8081: the public services (what the edge calls) and health. */
  readonly grpcPort: number;
  /** INTERNAL_GRPC_PORT, default 8082: the internal services (workloads with service-account tokens) and health. */
  readonly internalGrpcPort: number;
  readonly host: string;
  readonly services: readonly ModuleName[];
  readonly databaseUrl: string | undefined;
  /**
   * DATABASE_READ_URL, optional: a second pool for reads that may lag, e.g. a streaming replica.
   * Only the analytics read endpoints use it; everything that writes, or must see its own
   * writes, stays on DATABASE_URL. Requires DATABASE_URL. See SCALING.md.
   */
  readonly databaseReadUrl: string | undefined;
  /**
   * REDIS_URL: `redis://` / `rediss://` (one server), `redis+sentinel://` (a master found through
   * Sentinel) or `redis+cluster://` (Redis Cluster); the forms are in redis-url.ts.
   */
  readonly redisUrl: string | undefined;
  readonly dataDir: string;
  readonly jwtSecret: string | undefined;
  readonly jwksUrl: string | undefined;
  /** JWT_ISSUER: when set, an access token's `iss` must equal it. */
  readonly jwtIssuer: string | undefined;
  /** JWT_AUDIENCE: when set, an access token's `aud` must name it. */
  readonly jwtAudience: string | undefined;
  readonly logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  /** gRPC address of the public services when the edge runs without them (SERVICES=edge). */
  readonly edgeUpstreamUrl: string | undefined;
  /** Create the demo organization on first start with the embedded database. */
  readonly seedDemo: boolean;
  /**
   * DEMO_RUNNER, default true with the embedded database and false with DATABASE_URL: run the
   * demo runner in this process (it answers every pending session with a reply that says it comes
   * from the demo runner). Runs where the sessions module does, whatever WORKERS says.
   */
  readonly demoRunner: boolean;
  /**
   * WORKERS, default true: run the background workers (the analytics rollup schedule, the
   * computers provisioner, the idempotency-key pruner) beside the services. false serves
   * requests only, e.g. in API replicas while one deployment runs the workers.
   */
  readonly workers: boolean;
  /**
   * GRPC_UNARY_FAST_PATH, default true: the gRPC listeners serve unary binary gRPC calls on the
   * raw HTTP/2 stream (grpc-unary.ts); false sends them through Connect's handler as every
   * other request (the same answers, at about twice the CPU per call).
   */
  readonly grpcUnaryFastPath: boolean;
  /**
   * REQUEST_TIMEOUT_MS, default 30 000 (Envoy's request_timeout and route timeout in envoy.yaml):
   * the REST edge's deadline per request. A body not received within it is answered 408; a call
   * not completed within it of the complete request, 504. The gRPC listeners answer a request
   * message not received within it DEADLINE_EXCEEDED (request-deadline.ts).
   */
  readonly requestTimeoutMs: number;
  /**
   * REQUEST_MEMORY_BYTES, default a quarter of V8's heap limit (node's --max-old-space-size, or
   * what Node derives from the machine's or container's memory): the heap that request messages
   * of a megabyte or more, estimated before they are decoded, may take at once in this process
   * (request-memory.ts). Beyond it a message is answered UNAVAILABLE (503, Retry-After); one
   * larger than it alone, RESOURCE_EXHAUSTED (429).
   */
  readonly requestMemoryBytes: number;
  /**
   * EDGE_MAX_CONNECTIONS, default 1024 (Envoy's global_downstream_max_connections in envoy.yaml):
   * open connections the REST edge accepts; more are closed as they arrive.
   */
  readonly edgeMaxConnections: number;
  /**
   * CORS_ALLOWED_ORIGINS, default none: the browser origins (`https://app.example.com`, comma
   * separated) allowed to call the public gRPC port with Connect or gRPC-Web (cors.ts).
   */
  readonly corsAllowedOrigins: readonly string[];
}

export class ConfigError extends Error {
  constructor(variable: string, problem: string) {
    super(`invalid configuration: ${variable} ${problem}`);
    this.name = "ConfigError";
  }
}

export type Env = Record<string, string | undefined>;

function port(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a port number, got "${raw}"`);
  const value = Number(raw);
  if (value > 65535) throw new ConfigError(name, `must be 0-65535, got ${value}`);
  return value;
}

/** A URL setting in one of `protocols`; undefined when unset. */
export function urlSetting(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, "is not a valid URL");
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(" or ")}, got ${parsed.protocol}`);
  }
  return raw;
}

/** REDIS_URL in any of the forms redis-url.ts reads; undefined when unset. */
function redisUrlSetting(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  try {
    parseRedisUrl(raw);
  } catch (error) {
    throw new ConfigError(name, error instanceof RedisUrlError ? error.message : "is not a valid URL");
  }
  return raw;
}

export function positiveMs(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1)
    throw new ConfigError(name, `must be a positive number of milliseconds, got "${raw}"`);
  return Number(raw);
}

function positiveInteger(env: Env, name: string, fallback: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max)
    throw new ConfigError(name, `must be a whole number from 1 to ${max}, got "${raw.slice(0, 40)}"`);
  return Number(raw);
}

/** A size in bytes, a whole number of at least `min`. */
function bytesSetting(env: Env, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw)) || Number(raw) < min)
    throw new ConfigError(name, `must be a whole number of bytes, at least ${min}, got "${raw.slice(0, 40)}"`);
  return Number(raw);
}

export function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw === "true") return true;
  if (raw === "false") return false;
  throw new ConfigError(name, `must be true or false, got "${raw.slice(0, 40)}"`);
}

/**
 * CORS_ALLOWED_ORIGINS: a comma list of origins, each exactly as a browser sends it in `Origin`
 * (scheme, host and a port other than the scheme's default; no path, no trailing slash, lower
 * case), since the match is exact. `*` is refused: every origin is never what is meant here.
 */
export function parseOrigins(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return [];
  const out: string[] = [];
  for (const item of raw.split(",").map((s) => s.trim())) {
    if (item === "") continue;
    let origin: string;
    try {
      const url = new URL(item);
      origin = url.protocol === "http:" || url.protocol === "https:" ? url.origin : "";
    } catch {
      origin = "";
    }
    if (origin === "") throw new ConfigError(name, `names "${item.slice(0, 80)}", which is not an http(s) origin`);
    if (origin !== item)
      throw new ConfigError(name, `names "${item.slice(0, 80)}": write the origin as browsers send it, "${origin}"`);
    if (!out.includes(origin)) out.push(origin);
  }
  return out;
}

/** Expands SERVICES ("all" or a comma list) into module names, rejecting unknown names. */
export function parseServices(raw: string | undefined): ModuleName[] {
  const value = (raw ?? "").trim();
  if (value === "" || value === "all") return [...MODULE_NAMES];
  const names = value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  const out: ModuleName[] = [];
  for (const name of names) {
    if (name === "all") return [...MODULE_NAMES];
    if (!(MODULE_NAMES as readonly string[]).includes(name)) {
      throw new ConfigError("SERVICES", `names an unknown service "${name}" (known: all, ${MODULE_NAMES.join(", ")})`);
    }
    if (!out.includes(name as ModuleName)) out.push(name as ModuleName);
  }
  if (out.length === 0) throw new ConfigError("SERVICES", "is empty");
  return out;
}

/**
 * Enough for every client of one edge process with room to spare, while a flood of connections
 * that send nothing (each held up to the header or request deadline) stays a bounded cost in
 * memory and file descriptors.
 */
export const DEFAULT_EDGE_MAX_CONNECTIONS = 1024;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

/** The platform's own settings; loadConfig (services/config.ts) adds every module's section. */
export function loadPlatformConfig(env: Env = process.env): PlatformConfig {
  const logLevel = (env.LOG_LEVEL ?? "info") as Config["logLevel"];
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError("LOG_LEVEL", `must be one of ${LOG_LEVELS.join(", ")}`);
  }
  const jwtSecret = env.JWT_SECRET || undefined;
  if (jwtSecret !== undefined && jwtSecret.length < 32) {
    throw new ConfigError("JWT_SECRET", "must be at least 32 characters (HS256 needs a 256-bit key)");
  }
  const services = parseServices(env.SERVICES);
  const edgeUpstreamUrl = urlSetting(env, "EDGE_UPSTREAM_URL", ["http:", "https:"]);
  const config: PlatformConfig = {
    port: port(env, "PORT", 8080),
    grpcPort: port(env, "GRPC_PORT", 8081),
    internalGrpcPort: port(env, "INTERNAL_GRPC_PORT", 8082),
    host: env.HOST || "127.0.0.1",
    services,
    databaseUrl: urlSetting(env, "DATABASE_URL", ["postgres:", "postgresql:"]),
    databaseReadUrl: urlSetting(env, "DATABASE_READ_URL", ["postgres:", "postgresql:"]),
    redisUrl: redisUrlSetting(env, "REDIS_URL"),
    dataDir: env.DATA_DIR || ".data",
    jwtSecret,
    jwksUrl: urlSetting(env, "JWKS_URL", ["http:", "https:"]),
    jwtIssuer: env.JWT_ISSUER || undefined,
    jwtAudience: env.JWT_AUDIENCE || undefined,
    logLevel,
    edgeUpstreamUrl,
    seedDemo: env.SEED_DEMO !== "false",
    demoRunner: flag(env, "DEMO_RUNNER", !env.DATABASE_URL),
    workers: flag(env, "WORKERS", true),
    grpcUnaryFastPath: flag(env, "GRPC_UNARY_FAST_PATH", true),
    requestTimeoutMs: positiveMs(env, "REQUEST_TIMEOUT_MS", 30_000),
    requestMemoryBytes: bytesSetting(env, "REQUEST_MEMORY_BYTES", defaultRequestMemoryBytes(), COUNTED_FROM_BYTES),
    edgeMaxConnections: positiveInteger(env, "EDGE_MAX_CONNECTIONS", DEFAULT_EDGE_MAX_CONNECTIONS, 1_000_000),
    corsAllowedOrigins: parseOrigins(env, "CORS_ALLOWED_ORIGINS"),
  };
  if (config.grpcPort !== 0 && config.grpcPort === config.internalGrpcPort) {
    throw new ConfigError(
      "INTERNAL_GRPC_PORT",
      `must differ from GRPC_PORT (${config.grpcPort}): internal services have a listener of their own`,
    );
  }
  if (
    (config.jwtIssuer !== undefined || config.jwtAudience !== undefined) &&
    jwtSecret === undefined &&
    config.jwksUrl === undefined
  ) {
    throw new ConfigError(
      config.jwtIssuer !== undefined ? "JWT_ISSUER" : "JWT_AUDIENCE",
      "is set but neither JWT_SECRET nor JWKS_URL is",
    );
  }
  if (config.databaseReadUrl !== undefined && config.databaseUrl === undefined) {
    throw new ConfigError(
      "DATABASE_READ_URL",
      "is set but DATABASE_URL is not (the embedded database has no replica; set both or neither)",
    );
  }
  const onlyEdge = services.includes("edge") && services.length === 1;
  if (onlyEdge && edgeUpstreamUrl === undefined) {
    throw new ConfigError("EDGE_UPSTREAM_URL", "is required when SERVICES=edge runs without the services it routes to");
  }
  return Object.freeze(config);
}
