// What a service module is (Loki-style targets): a named unit that serves some gRPC services,
// each with its access policy, and may run background workers. It names the modules it depends
// on, may read its own section of the configuration, and may provide what the platform uses
// (the authenticator, the telemetry sink). services/modules.ts registers them
// (module-registry.ts orders them and finds providers).
import type { ConnectRouter } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import type { Kysely } from "kysely";
import type { Database } from "../database.js";
import type { AuthPolicy, ClosableAuthenticator } from "./auth.js";
import type { Config, Env, ModuleName } from "./config.js";
import type { CursorStore } from "./cursors.js";
import type { Database as DatabaseHandle } from "./db.js";
import type { KeyValueStore } from "./kv.js";
import type { Logger } from "./logger.js";
import type { TelemetrySink } from "./telemetry.js";

/** Every module but the REST edge, which is the platform's own (SERVICES=edge). */
export type ServiceModuleName = Exclude<ModuleName, "edge">;

/** The shared dependencies every module is built from. */
export interface Platform {
  readonly config: Config;
  readonly logger: Logger;
  readonly db: Kysely<Database>;
  /**
   * For reads that may lag behind db (DATABASE_READ_URL, a replica); db itself when unset. Only
   * what can answer from a slightly older copy reads here (the analytics read endpoints); a
   * handler that writes, or must see its own writes, uses db.
   */
  readonly readDb: Kysely<Database>;
  readonly kv: KeyValueStore;
  readonly cursors: CursorStore;
  /** Telemetry for the platform's own activity (provided by the analytics module). */
  readonly telemetry: TelemetrySink;
  /**
   * The Postgres URL of db, for a connection of one's own (a LISTEN); undefined on the embedded
   * database, which no other process writes to through another server.
   */
  readonly databaseUrl: string | undefined;
  /** Aborted when the process begins to stop: long-lived streams end, so that the drain completes. */
  readonly draining: AbortSignal;
}

/**
 * What the platform uses from some module's code, each provided by exactly one module. A provider
 * is used whether or not its module runs in this process: every gRPC listener authenticates, and
 * a Deployment running sessions alone still records telemetry.
 */
export interface Provisions {
  /** Checks every call's credentials, on every listener; closed on shutdown. */
  authenticator(platform: Platform, database: DatabaseHandle<Database>): ClosableAuthenticator;
  /** Where the platform's own activity goes as telemetry events. */
  telemetrySink(db: Kysely<Database>): TelemetrySink;
}

export type ProvisionKind = keyof Provisions;
/** Every kind of provision: the registry checks that each has exactly one provider. */
export const PROVISION_KINDS: readonly ProvisionKind[] = ["authenticator", "telemetrySink"];

export interface ServedService {
  readonly service: DescService;
  readonly policy: AuthPolicy;
  /**
   * Methods whose calls last until the client leaves (event streams): the edges give their
   * routes no timeout (the TypeScript edge no deadline, envoy.yaml `timeout: 0s` and no retry).
   */
  readonly untimed?: readonly string[];
  /**
   * Methods whose binary gRPC requests reach the implementation undecoded (undecoded.ts): those
   * whose decoded form could be far larger than the bytes the listener admits. `maxBytes` is their
   * largest message in binary gRPC; what Connect's handler decodes for them (other protocols)
   * keeps the registration's readMaxBytes.
   */
  readonly undecoded?: { readonly methods: readonly string[]; readonly maxBytes: number };
}

/** The gRPC path ("/<service type name>/<method>") of every undecoded method of `served`, with its largest message. */
export function undecodedPaths(served: readonly ServedService[]): Map<string, number> {
  return new Map(
    served.flatMap(({ service, undecoded }) =>
      (undecoded?.methods ?? []).map((m) => [`/${service.typeName}/${m}`, undecoded!.maxBytes] as const),
    ),
  );
}

/** "<service type name>/<method>" of every untimed method of `served`. */
export function untimedRpcs(served: readonly ServedService[]): Set<string> {
  return new Set(served.flatMap((s) => (s.untimed ?? []).map((m) => `${s.service.typeName}/${m}`)));
}

export interface Worker {
  stop(): Promise<void>;
}

export interface ServiceModule<Settings = unknown> {
  readonly name: ServiceModuleName;
  /**
   * The modules this one needs before it: started first, and their demo data written first (the
   * organization's users, say). An unknown name or a cycle stops the process at start.
   */
  readonly dependsOn: readonly ServiceModuleName[];
  /** What this module's code provides for the platform (see Provisions). */
  readonly provides?: Partial<Provisions>;
  /**
   * Reads this module's own section of the configuration (config.modules[name]); throws
   * ConfigError naming a bad variable. Read in every process, whichever modules it runs.
   */
  settings?(env: Env): Settings;
  /** Every service this module serves; public ones (isPublic) are routed by the edge. */
  readonly services: readonly ServedService[];
  /** Registers the implementations: one router.service(...) per service. */
  routes(platform: Platform): (router: ConnectRouter) => void;
  /** Background work (schedulers, provisioners); stopped on shutdown. */
  start?(platform: Platform): Promise<Worker>;
  /** Writes realistic demo data for an organization (`agentplane demo`, first start). Idempotent enough to run twice. */
  demo?(db: Kysely<Database>, orgId: string, options: DemoOptions): Promise<void>;
}

/** A module's own section of the configuration, as its `settings` read it. */
export function settingsOf<Settings>(config: Config, module: ServiceModule<Settings>): Settings {
  return config.modules[module.name] as Settings;
}

export interface DemoOptions {
  /** Days of history to generate, ending yesterday. */
  readonly days: number;
  /** Users to generate (beyond those that exist). */
  readonly users: number;
}

/** Served on the public port and routed by the edge: public policies, and open ones marked public. */
export const isPublic = (s: ServedService): boolean =>
  s.policy.kind === "public" || (s.policy.kind === "open" && s.policy.public === true);
