// One gRPC listener: cleartext HTTP/2 speaking gRPC, gRPC-Web and Connect for a set of services,
// with the message size limit and the credential check before the body (early-auth.ts). The
// server runs two: the public services (what the edge calls) and the internal ones (workloads).
import { createServer as createHttp2Server, type Http2Server, type Http2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Authenticator, AuthPolicy } from "./auth.js";
import { createEarlyAuth } from "./early-auth.js";
import type { Logger } from "./logger.js";

export interface GrpcListenerOptions {
  readonly routes: (router: ConnectRouter) => void;
  readonly interceptors: Interceptor[];
  readonly authenticator: Authenticator;
  readonly policies: ReadonlyMap<string, AuthPolicy>;
  /** Largest request message (after decompression) and body, in bytes. */
  readonly maxMessageBytes: number;
  readonly trustForwardedFor: boolean;
  readonly logger: Logger;
  readonly port: number;
  readonly host: string;
}

export interface GrpcListener {
  readonly port: number;
  /** Stops accepting; GOAWAY lets streams in flight finish. Resolves when every connection closed. */
  close(): Promise<void>;
  /** Destroys every connection left (after the drain timeout). */
  destroy(): void;
}

export async function startGrpcListener(options: GrpcListenerOptions): Promise<GrpcListener> {
  const early = createEarlyAuth({ authenticator: options.authenticator, policies: options.policies, trustForwardedFor: options.trustForwardedFor, logger: options.logger });
  const handler = connectNodeAdapter({
    routes: options.routes,
    interceptors: options.interceptors,
    readMaxBytes: options.maxMessageBytes,
    contextValues: (req) => early.contextValues(req),
  });
  const server: Http2Server = createHttp2Server(early.wrap(handler));
  const sessions = new Set<Http2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
  return {
    port,
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sessions) s.close();
      return closed;
    },
    destroy() {
      for (const s of sessions) s.destroy();
    },
  };
}
