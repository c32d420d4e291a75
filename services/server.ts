// The runtime: opens Postgres and Redis (or their embedded stand-ins), applies migrations, serves
// the selected modules over h2c (gRPC, gRPC-Web and Connect) on two listeners — the public
// services on GRPC_PORT, the internal ones on INTERNAL_GRPC_PORT — and, when the edge module is
// on, the REST/JSON edge. stop() drains in-flight requests before closing.
import type { Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { ConnectRouter, Interceptor, Transport } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import type { Database } from "./database.js";
import { migrations } from "./migrations.js";
import { ALL_MODULES, MODULES } from "./modules.js";
import { createRestEdge } from "./edge/edge.js";
import { createEdgeHttpServer, type EdgeHttpServer } from "./edge/http-server.js";
import { createLocalTransport } from "./edge/local-transport.js";
import { createUpstreamTransport } from "./edge/upstream-transport.js";
import { ANY_WORKLOAD, authInterceptor, type AuthPolicy, OPEN, policyMap } from "./platform/auth.js";
import { OPEN_SERVICE_MAX_REQUEST_BYTES, RequestMemory } from "./platform/request-memory.js";
import { startGrpcListener } from "./platform/grpc-listener.js";
import { createCors, type StreamCors } from "./platform/cors.js";
import { startDemoRunner } from "./sessions/runner/demo-runner.js";
import type { Config } from "./platform/config.js";
import { CursorStore } from "./platform/cursors.js";
import { openDatabase, type Database as DatabaseHandle } from "./platform/db.js";
import { cachedProbe, createHealthService } from "./platform/health.js";
import { openKeyValueStore, type KeyValueStore } from "./platform/kv.js";
import type { Logger } from "./platform/logger.js";
import { migrateToLatest } from "./platform/migrator.js";
import {
  isPublic,
  type Platform,
  type ServedService,
  undecodedPaths,
  untimedRpcs,
  type Worker,
} from "./platform/module.js";
import { rateLimitInterceptor } from "./platform/rate-limit.js";
import { REFLECTION_SERVICES, reflectionRoutes } from "./platform/reflection.js";
import { requestContextInterceptor } from "./platform/request-context.js";

export const DRAIN_TIMEOUT_MS = 20_000;
/**
 * Largest REST request body: a message with its attachments (20 MiB decoded, base64 adds a
 * third) fits; Envoy's max_request_body_size carries the same figure.
 */
export const MAX_REQUEST_BODY_BYTES = 32 * 1024 * 1024;

export interface StartOptions {
  /** An already open database (tests); otherwise opened from the configuration. */
  database?: DatabaseHandle<Database>;
  /**
   * An already open read database (tests, standing in for a replica); otherwise opened from
   * DATABASE_READ_URL when set. Without either, reads use the database.
   */
  readDatabase?: DatabaseHandle<Database>;
  /** An already open key-value store (tests); otherwise opened from the configuration. */
  kv?: KeyValueStore;
  /** Run background workers (schedulers, provisioners). Default: config.workers (WORKERS). */
  workers?: boolean;
}

export interface RunningServer {
  readonly platform: Platform;
  readonly database: DatabaseHandle<Database>;
  /** The read database (DATABASE_READ_URL) when there is one apart from the database. */
  readonly readDatabase: DatabaseHandle<Database> | undefined;
  /** The public services' gRPC listener (GRPC_PORT). */
  readonly grpcUrl: string;
  /** The internal services' gRPC listener (INTERNAL_GRPC_PORT). */
  readonly internalGrpcUrl: string;
  readonly restUrl: string | undefined;
  /** The process's count of request messages' memory (platform/request-memory.ts). */
  readonly requestMemory: RequestMemory;
  stop(): Promise<void>;
}

function listen(server: HttpServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function urlOf(host: string, port: number): string {
  return `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

export async function startServer(config: Config, logger: Logger, options: StartOptions = {}): Promise<RunningServer> {
  const database =
    options.database ??
    (await openDatabase<Database>({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, logger }));
  const ownsDatabase = options.database === undefined;
  // A replica is not migrated here: it follows the primary's schema through replication.
  const readDatabase =
    options.readDatabase ??
    (config.databaseReadUrl === undefined
      ? undefined
      : await openDatabase<Database>({ databaseUrl: config.databaseReadUrl, dataDir: config.dataDir, logger }));
  const ownsReadDatabase = options.readDatabase === undefined && readDatabase !== undefined;
  const kv = options.kv ?? (await openKeyValueStore({ redisUrl: config.redisUrl, logger }));
  const ownsKv = options.kv === undefined;
  if (ownsDatabase) await migrateToLatest(database.db, migrations, logger);

  // Aborted when stop() begins: health answers NOT_SERVING and open watches end.
  const draining = new AbortController();
  const platform: Platform = {
    config,
    logger,
    db: database.db,
    readDb: readDatabase?.db ?? database.db,
    kv,
    cursors: new CursorStore(kv),
    telemetry: MODULES.provider("telemetrySink")(database.db),
    databaseUrl: database.kind === "postgres" ? database.url : undefined,
    draining: draining.signal,
  };
  const modules = MODULES.running(config.services);
  const served = modules.flatMap((m) => m.services);
  const publicServed = served.filter(isPublic);
  const internalServed = served.filter((s) => !isPublic(s));
  const policies = policyMap([...served.map((s) => [s.service, s.policy] as const), [Health, OPEN] as const]);
  const probe = cachedProbe(async () => {
    const [dbUp, readDbUp, kvUp] = await Promise.all([database.ping(), readDatabase?.ping() ?? true, kv.ping()]);
    return dbUp && readDbUp && kvUp;
  });

  // Every listener authenticates, whichever modules run here: the provider runs regardless.
  const authenticator = MODULES.provider("authenticator")(platform, database);
  const interceptorsFor = (policies: ReadonlyMap<string, AuthPolicy>): Interceptor[] => [
    requestContextInterceptor(logger),
    authInterceptor(authenticator, policies),
    rateLimitInterceptor(kv),
  ];
  const interceptors = interceptorsFor(policies);
  // Each module's implementations are built once and shared by every router (both gRPC
  // listeners and the in-process edge), with whatever state they keep.
  const moduleRoutes = modules.map((module) => module.routes(platform));
  const routesOf = (services: readonly ServedService[]) => {
    const names = new Set(services.map((s) => s.service.typeName));
    const health = createHealthService(probe, [...names], draining.signal);
    return (router: ConnectRouter) => {
      const only = onlyServices(router, names);
      for (const register of moduleRoutes) register(only);
      // Open on every listener: requests of a service name, within a small limit.
      router.service(Health, health, { readMaxBytes: OPEN_SERVICE_MAX_REQUEST_BYTES });
    };
  };
  const routes = routesOf(served);
  // One count of request messages' memory for the process: both listeners and the REST edge.
  const requestMemory = new RequestMemory(config.requestMemoryBytes);

  // gRPC, gRPC-Web and Connect over cleartext HTTP/2 (Envoy's upstream protocol), on two
  // listeners so that the edge, and NetworkPolicies, can reach the public services alone. Each
  // also serves server reflection (platform/reflection.ts) describing exactly what it serves,
  // under `reflectionPolicy`: open on the public listener, as the API's contract is public; a
  // service-account token on the internal one, as everything there wants.
  const listen2 = (
    name: string,
    services: readonly ServedService[],
    port: number,
    trustForwardedFor: boolean,
    reflectionPolicy: AuthPolicy,
    cors?: StreamCors,
  ) => {
    const platformServices: readonly (readonly [DescService, AuthPolicy])[] = [
      [Health, OPEN],
      ...REFLECTION_SERVICES.map((service) => [service, reflectionPolicy] as const),
    ];
    const described = [...services.map((s) => s.service), ...platformServices.map(([service]) => service)];
    const reflection = reflectionRoutes(described);
    const listenerPolicies = policyMap([...services.map((s) => [s.service, s.policy] as const), ...platformServices]);
    const serviceRoutes = routesOf(services);
    return startGrpcListener({
      name,
      routes: (router) => {
        serviceRoutes(router);
        reflection(router);
      },
      interceptors: interceptorsFor(listenerPolicies),
      authenticator,
      policies: listenerPolicies,
      services: described,
      maxMessageBytes: MAX_REQUEST_BODY_BYTES,
      requestTimeoutMs: config.requestTimeoutMs,
      // Behind the edge, the client is the last X-Forwarded-For hop; workloads connect directly.
      trustForwardedFor,
      fastUnary: config.grpcUnaryFastPath,
      undecoded: undecodedPaths(services),
      requestMemory,
      cors,
      logger,
      port,
      host: config.host,
    });
  };
  // Browsers may call the public services from CORS_ALLOWED_ORIGINS (platform/cors.ts); workloads are no browsers.
  const grpcListener = await listen2(
    "public",
    publicServed,
    config.grpcPort,
    true,
    OPEN,
    createCors(config.corsAllowedOrigins),
  );
  const internalListener = await listen2("internal", internalServed, config.internalGrpcPort, false, ANY_WORKLOAD);

  let restServer: EdgeHttpServer | undefined;
  let restPort: number | undefined;
  if (config.services.includes("edge")) {
    // The edge routes every public service. When all of them run in this process it calls them
    // in process, through the same interceptors (local-transport.ts); otherwise it calls
    // EDGE_UPSTREAM_URL over gRPC (upstream-transport.ts).
    const publicServices = ALL_MODULES.flatMap((m) => m.services.filter(isPublic).map((s) => s.service));
    const allLocal = ALL_MODULES.every((m) => modules.includes(m));
    const transport: Transport =
      allLocal || !config.edgeUpstreamUrl
        ? createLocalTransport(routes, interceptors)
        : createUpstreamTransport(config.edgeUpstreamUrl);
    const edge = createRestEdge({
      services: publicServices,
      transport,
      logger,
      maxBodyBytes: MAX_REQUEST_BODY_BYTES,
      timeoutMs: config.requestTimeoutMs,
      requestMemory,
      untimed: untimedRpcs(ALL_MODULES.flatMap((m) => m.services.filter(isPublic))),
    });
    restServer = createEdgeHttpServer(edge, {
      requestTimeoutMs: config.requestTimeoutMs,
      maxConnections: config.edgeMaxConnections,
      logger,
    });
    restPort = await listen(restServer.server, config.port, config.host);
  }

  const workers: Worker[] = [];
  if (options.workers ?? config.workers)
    for (const module of modules) if (module.start) workers.push(await module.start(platform));

  const grpcUrl = urlOf(config.host, grpcListener.port);
  const internalGrpcUrl = urlOf(config.host, internalListener.port);
  // A client of the internal listener like any runner, so it is stopped before the listeners.
  const demoRunner =
    config.demoRunner && modules.some((m) => m.name === "sessions")
      ? await startDemoRunner({ db: database.db, internalGrpcUrl, logger })
      : undefined;
  const restUrl = restPort === undefined ? undefined : urlOf(config.host, restPort);
  logger.info(
    {
      grpc: grpcUrl,
      internalGrpc: internalGrpcUrl,
      rest: restUrl,
      services: config.services,
      database: database.kind,
      readDatabase: readDatabase === undefined ? undefined : readDatabase.kind,
      kv: kv.kind,
    },
    "listening",
  );

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      logger.info("draining");
      draining.abort();
      await demoRunner?.stop();
      const force = setTimeout(() => {
        grpcListener.destroy();
        internalListener.destroy();
        restServer?.closeAll();
      }, DRAIN_TIMEOUT_MS);
      force.unref();
      // GOAWAY lets calls in flight finish (a request still arriving is reset: it would hold the
      // drain until the timeout); the REST edge's answers say Connection: close.
      const closed = Promise.all([grpcListener.close(), internalListener.close(), restServer?.drain()]);
      await closed;
      clearTimeout(force);
      await Promise.all(workers.map((w) => w.stop()));
      await authenticator.close();
      if (ownsKv) await kv.close();
      if (ownsReadDatabase) await readDatabase?.close();
      if (ownsDatabase) await database.close();
      logger.info("stopped");
    })());

  return { platform, database, readDatabase, grpcUrl, internalGrpcUrl, restUrl, requestMemory, stop };
}

/**
 * A view of `router` that registers only the named services: a module registers all of its
 * services, and each listener takes the ones it serves.
 */
function onlyServices(router: ConnectRouter, names: ReadonlySet<string>): ConnectRouter {
  return new Proxy(router, {
    get(target, property, receiver) {
      if (property === "service") {
        return (...args: Parameters<ConnectRouter["service"]>) =>
          names.has(args[0].typeName) ? target.service(...args) : target;
      }
      return Reflect.get(target, property, receiver) as unknown;
    },
  });
}
