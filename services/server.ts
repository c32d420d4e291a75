// The runtime: opens Postgres and Redis (or their embedded stand-ins), applies migrations, serves
// the selected modules over h2c (gRPC, gRPC-Web and Connect on one port) and, when the edge
// module is on, the REST/JSON edge. stop() drains in-flight requests before closing.
import type { Server as HttpServer } from "node:http";
import { createServer as createHttp2Server, type Http2Server, type Http2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import type { ConnectRouter, Interceptor, Transport } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import type { Database } from "./database.js";
import { migrations } from "./migrations.js";
import { ALL_MODULES, modulesFor } from "./modules.js";
import { createRestEdge } from "./edge/edge.js";
import { createEdgeHttpServer, type EdgeHttpServer } from "./edge/http-server.js";
import { createLocalTransport } from "./edge/local-transport.js";
import { authInterceptor, OPEN, policyMap } from "./platform/auth.js";
import type { Config } from "./platform/config.js";
import { CursorStore } from "./platform/cursors.js";
import { openDatabase, type Database as DatabaseHandle } from "./platform/db.js";
import { createHttp2SessionManager } from "./platform/http2-session-manager.js";
import { cachedProbe, createHealthService } from "./platform/health.js";
import { openKeyValueStore, type KeyValueStore } from "./platform/kv.js";
import type { Logger } from "./platform/logger.js";
import { migrateToLatest } from "./platform/migrator.js";
import { isPublic, type Platform, type Worker } from "./platform/module.js";
import { rateLimitInterceptor } from "./platform/rate-limit.js";
import { requestContextInterceptor } from "./platform/request-context.js";
import { createAuthenticator } from "./organization/credentials.js";
import { createTelemetrySink } from "./analytics/sink.js";

export const DRAIN_TIMEOUT_MS = 20_000;
/**
 * Largest REST request body: a message with its attachments (20 MiB decoded, base64 adds a
 * third) fits; Envoy's max_request_body_size carries the same figure.
 */
export const MAX_REQUEST_BODY_BYTES = 32 * 1024 * 1024;

export interface StartOptions {
  /** An already open database (tests); otherwise opened from the configuration. */
  database?: DatabaseHandle<Database>;
  /** An already open key-value store (tests); otherwise opened from the configuration. */
  kv?: KeyValueStore;
  /** Run background workers (schedulers, provisioners). Default: config.workers (WORKERS). */
  workers?: boolean;
}

export interface RunningServer {
  readonly platform: Platform;
  readonly database: DatabaseHandle<Database>;
  readonly grpcUrl: string;
  readonly restUrl: string | undefined;
  stop(): Promise<void>;
}

function listen(server: HttpServer | Http2Server, port: number, host: string): Promise<number> {
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
  const database = options.database ?? (await openDatabase<Database>({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, logger }));
  const ownsDatabase = options.database === undefined;
  const kv = options.kv ?? (await openKeyValueStore({ redisUrl: config.redisUrl, logger }));
  const ownsKv = options.kv === undefined;
  if (ownsDatabase) await migrateToLatest(database.db, migrations, logger);

  const platform: Platform = {
    config,
    logger,
    db: database.db,
    kv,
    cursors: new CursorStore(kv),
    telemetry: createTelemetrySink(database.db),
  };
  const modules = modulesFor(config.services);
  const served = modules.flatMap((m) => m.services);
  const policies = policyMap([...served.map((s) => [s.service, s.policy] as const), [Health, OPEN] as const]);
  const probe = cachedProbe(async () => {
    const [dbUp, kvUp] = await Promise.all([database.ping(), kv.ping()]);
    return dbUp && kvUp;
  });

  const interceptors: Interceptor[] = [
    requestContextInterceptor(logger),
    authInterceptor(createAuthenticator(database.db, { secret: config.jwtSecret, jwksUrl: config.jwksUrl }), policies),
    rateLimitInterceptor(kv),
  ];
  // Each module's implementations are built once and shared by every router (the gRPC server and
  // the in-process edge), with whatever state they keep.
  const moduleRoutes = modules.map((module) => module.routes(platform));
  const routes = (router: ConnectRouter) => {
    for (const register of moduleRoutes) register(router);
    router.service(Health, createHealthService(probe, served.map((s) => s.service.typeName)));
  };

  // gRPC, gRPC-Web and Connect over cleartext HTTP/2 (Envoy's upstream protocol).
  const grpcServer = createHttp2Server(connectNodeAdapter({ routes, interceptors }));
  const sessions = new Set<Http2Session>();
  grpcServer.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  const grpcPort = await listen(grpcServer, config.grpcPort, config.host);

  let restServer: EdgeHttpServer | undefined;
  let restPort: number | undefined;
  if (config.services.includes("edge")) {
    // The edge routes every public service. When all of them run in this process it calls them
    // in process, through the same interceptors (local-transport.ts); otherwise it calls
    // EDGE_UPSTREAM_URL over gRPC.
    const publicServices = ALL_MODULES.flatMap((m) => m.services.filter(isPublic).map((s) => s.service));
    const allLocal = ALL_MODULES.every((m) => modules.includes(m));
    const transport: Transport =
      allLocal || !config.edgeUpstreamUrl
        ? createLocalTransport(routes, interceptors)
        : createGrpcTransport({ baseUrl: config.edgeUpstreamUrl, sessionManager: createHttp2SessionManager(config.edgeUpstreamUrl) });
    const edge = createRestEdge({ services: publicServices, transport, logger, maxBodyBytes: MAX_REQUEST_BODY_BYTES, timeoutMs: config.requestTimeoutMs });
    restServer = createEdgeHttpServer(edge, { requestTimeoutMs: config.requestTimeoutMs, maxConnections: config.edgeMaxConnections, logger });
    restPort = await listen(restServer.server, config.port, config.host);
  }

  const workers: Worker[] = [];
  if (options.workers ?? config.workers) for (const module of modules) if (module.start) workers.push(await module.start(platform));

  const grpcUrl = urlOf(config.host, grpcPort);
  const restUrl = restPort === undefined ? undefined : urlOf(config.host, restPort);
  logger.info({ grpc: grpcUrl, rest: restUrl, services: config.services, database: database.kind, kv: kv.kind }, "listening");

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      logger.info("draining");
      const force = setTimeout(() => {
        for (const s of sessions) s.destroy();
        restServer?.closeAll();
      }, DRAIN_TIMEOUT_MS);
      force.unref();
      const closed = Promise.all([
        new Promise<void>((resolve) => grpcServer.close(() => resolve())),
        restServer?.drain(),
      ]);
      // GOAWAY lets streams in flight finish; the REST edge's answers say Connection: close.
      for (const s of sessions) s.close();
      await closed;
      clearTimeout(force);
      await Promise.all(workers.map((w) => w.stop()));
      if (ownsKv) await kv.close();
      if (ownsDatabase) await database.close();
      logger.info("stopped");
    })());

  return { platform, database, grpcUrl, restUrl, stop };
}
