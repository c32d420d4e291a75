// The REST edge's HTTP/1.1 server: its connection limits and its drain, as Envoy's listener,
// overload manager and HTTP connection manager set them in envoy.yaml.
//
// Limits: at most `maxConnections` open connections (more are closed as they arrive, as Envoy's
// global_downstream_max_connections does); headers within HEADERS_TIMEOUT_MS (Envoy's
// request_headers_timeout); the body within the request deadline (the edge answers 408 itself,
// edge.ts; node:http's requestTimeout is a backstop a second later); idle keep-alive connections
// closed after KEEP_ALIVE_TIMEOUT_MS (Envoy's idle_timeout).
//
// Drain (stop()): no new connections; every answer from then on carries Connection: close, so a
// keep-alive client moves away after the request it has in flight, which finishes; a connection
// that stays idle is closed. Nothing in flight is reset unless the caller's deadline forces it.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Server as NetServer, type Socket } from "node:net";
import type { Logger } from "pino";
import { handleClientError } from "./client-error.js";
import type { RestEdgeHandler } from "./edge.js";

/** Envoy's request_headers_timeout (envoy.yaml): the request line and headers must arrive within it. */
export const HEADERS_TIMEOUT_MS = 10_000;
/** Envoy's idle_timeout (envoy.yaml): an idle keep-alive connection is closed after it. */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** node:http checks its header and request timeouts this often (its default, 30 s, would make them late by as much). */
const TIMEOUT_CHECK_MS = 1_000;
/** The edge answers a late body at the deadline itself; node:http's own 408 comes this much later, for what the edge does not read. */
const BACKSTOP_MS = 1_000;
/** While draining, a connection with no request for this long is closed. */
export const DRAIN_IDLE_CLOSE_MS = 1_000;
const DRAIN_SWEEP_MS = 100;

export interface EdgeHttpServerOptions {
  /** REQUEST_TIMEOUT_MS. */
  requestTimeoutMs: number;
  /** EDGE_MAX_CONNECTIONS. */
  maxConnections: number;
  logger: Logger;
  /** While draining, close a connection idle this long. Default DRAIN_IDLE_CLOSE_MS. */
  drainIdleCloseMs?: number;
}

export interface EdgeHttpServer {
  readonly server: Server;
  /** Starts the drain (see above); resolves once the last connection has closed. */
  drain(): Promise<void>;
  /** Closes every connection left, in flight or not: the drain's deadline. */
  closeAll(): void;
}

interface Connection {
  /** Requests whose answer is not finished yet (more than one only when pipelined). */
  active: number;
  /** When the last answer finished (or the connection opened). */
  idleSince: number;
  /** socket.bytesRead then: more since means a request is arriving. */
  bytesRead: number;
}

export function createEdgeHttpServer(handler: RestEdgeHandler, options: EdgeHttpServerOptions): EdgeHttpServer {
  const { logger } = options;
  const drainIdleCloseMs = options.drainIdleCloseMs ?? DRAIN_IDLE_CLOSE_MS;
  const connections = new Map<Socket, Connection>();
  const unanswered = new Set<ServerResponse>();
  let draining = false;

  const server = createServer(
    {
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, options.requestTimeoutMs),
      requestTimeout: options.requestTimeoutMs + BACKSTOP_MS,
      connectionsCheckingInterval: TIMEOUT_CHECK_MS,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    },
    (req: IncomingMessage, res: ServerResponse) => {
      const connection = connections.get(req.socket);
      if (connection) connection.active++;
      if (draining) res.setHeader("connection", "close");
      else unanswered.add(res);
      res.once("close", () => {
        unanswered.delete(res);
        if (connection) {
          connection.active--;
          connection.idleSince = performance.now();
          connection.bytesRead = req.socket.bytesRead;
        }
      });
      void handler(req, res);
    },
  );
  server.maxConnections = options.maxConnections;
  // Requests the HTTP parser refuses (and node:http's own timeouts) still get the JSON error body.
  server.on("clientError", handleClientError);
  server.on("connection", (socket: Socket) => {
    connections.set(socket, { active: 0, idleSince: performance.now(), bytesRead: 0 });
    socket.once("close", () => connections.delete(socket));
  });

  // Connections refused at the limit, logged at most once a minute with their count.
  let dropped = 0;
  let dropLogged = 0;
  server.on("drop", () => {
    dropped++;
    const now = performance.now();
    if (dropLogged === 0 || now - dropLogged >= 60_000) {
      logger.warn(
        { maxConnections: options.maxConnections, refused: dropped },
        "REST edge at its connection limit (EDGE_MAX_CONNECTIONS): refusing new connections",
      );
      dropLogged = now;
      dropped = 0;
    }
  });

  /** Closes connections that have stayed idle for drainIdleCloseMs with nothing arriving. */
  const closeIdle = () => {
    const now = performance.now();
    for (const [socket, c] of connections) {
      if (c.active === 0 && socket.bytesRead === c.bytesRead && now - c.idleSince >= drainIdleCloseMs) socket.destroy();
    }
  };

  let drained: Promise<void> | undefined;
  return {
    server,
    drain() {
      return (drained ??= new Promise<void>((resolve) => {
        draining = true;
        // Answers not yet begun say Connection: close too: their clients send nothing more here.
        for (const res of unanswered) if (!res.headersSent) res.setHeader("connection", "close");
        unanswered.clear();
        // net.Server's close only stops listening. node:http's close() would also close every
        // connection idle at this instant, and a keep-alive client sending its next request on
        // one right now would have that request reset; such a connection gets its answer with
        // Connection: close instead, and one that stays idle is closed by the sweep.
        const sweep = setInterval(closeIdle, DRAIN_SWEEP_MS);
        NetServer.prototype.close.call(server, () => {
          clearInterval(sweep);
          resolve();
        });
      }));
    },
    closeAll() {
      for (const socket of connections.keys()) socket.destroy();
    },
  };
}
