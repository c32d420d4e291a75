// One gRPC listener: cleartext HTTP/2 speaking gRPC, gRPC-Web and Connect for a set of services,
// with the message size limit, the credential check before the body (early-auth.ts) and the
// deadline for the request to arrive (request-deadline.ts). The server runs two: the public
// services (what the edge calls) and the internal ones (workloads).
import {
  createServer as createHttp2Server,
  type Http2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import type { AddressInfo, Socket } from "node:net";
import { Code, ConnectError, createConnectRouter, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import type { DescService } from "@bufbuild/protobuf";
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import { clientDecodeErrors } from "./decode-errors.js";
import type { Authenticator, AuthPolicy } from "./auth.js";
import { createEarlyAuth } from "./early-auth.js";
import type { Logger } from "./logger.js";
import { createRequestDeadline } from "./request-deadline.js";
import { defaultRequestMemoryBytes, RequestMemory } from "./request-memory.js";
import { type BodyGuardMethod, guardRequestBody } from "./connect-body-guard.js";
import { createGrpcUnary } from "./grpc-unary.js";
import { createInvoker } from "./invoke.js";
import type { StreamCors } from "./cors.js";

/** The longest deadline a call may ask for: Node's largest timer. */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

export interface GrpcListenerOptions {
  /** Which listener, in its logs: "public" or "internal". */
  readonly name: string;
  readonly routes: (router: ConnectRouter) => void;
  readonly interceptors: Interceptor[];
  readonly authenticator: Authenticator;
  readonly policies: ReadonlyMap<string, AuthPolicy>;
  /** The services it serves. */
  readonly services: readonly DescService[];
  /** Largest request message (after decompression) and body, in bytes. */
  readonly maxMessageBytes: number;
  /** REQUEST_TIMEOUT_MS: a request must arrive in full within it (request-deadline.ts). */
  readonly requestTimeoutMs: number;
  readonly trustForwardedFor: boolean;
  /** Unary binary gRPC on the raw stream (grpc-unary.ts); false: through Connect like the rest. */
  readonly fastUnary: boolean;
  /**
   * The gRPC paths of methods whose binary gRPC requests reach the implementation undecoded
   * (undecoded.ts), with their largest message: served on the raw stream, compressed or not,
   * whatever `fastUnary` says.
   */
  readonly undecoded?: ReadonlyMap<string, number>;
  /** Browser origins' access (cors.ts); undefined: no CORS. */
  readonly cors?: StreamCors;
  /**
   * The process's count of request messages' memory (request-memory.ts): server.ts gives every
   * listener and the REST edge one; by default a count of this listener's own.
   */
  readonly requestMemory?: RequestMemory;
  readonly logger: Logger;
  readonly port: number;
  readonly host: string;
}

export interface GrpcListener {
  readonly port: number;
  /**
   * Stops accepting; GOAWAY lets the calls in flight finish, while streams whose request has not
   * arrived in full are reset at once (request-deadline.ts). Resolves when every connection closed.
   */
  close(): Promise<void>;
  /** Destroys every connection left (after the drain timeout), its socket included. */
  destroy(): void;
}

export async function startGrpcListener(options: GrpcListenerOptions): Promise<GrpcListener> {
  // The request deadline takes a request that has not arrived in full for one whose handler has
  // not run: true of a method taking one request message (Connect runs the handler once the
  // request's end is in), not of one streaming its requests (server reflection), which it leaves
  // alone until a stop (request-deadline.ts).
  const requestStreaming = new Set(
    options.services.flatMap((s) =>
      s.methods
        .filter((m) => m.methodKind === "client_streaming" || m.methodKind === "bidi_streaming")
        .map((m) => `/${s.typeName}/${m.name}`),
    ),
  );
  const early = createEarlyAuth({
    authenticator: options.authenticator,
    policies: options.policies,
    services: options.services,
    trustForwardedFor: options.trustForwardedFor,
    logger: options.logger,
  });
  const acceptCompression = [compressionGzip, compressionBrotli];
  // connectNodeAdapter's loop, with decode failures answered as the client's (decode-errors.ts).
  const router = createConnectRouter({
    interceptors: options.interceptors,
    readMaxBytes: options.maxMessageBytes,
    // Node cuts timers past 2^31 - 1 ms to 1 ms: a longer deadline would end a call at once.
    maxTimeoutMs: MAX_TIMEOUT_MS,
    acceptCompression,
  });
  options.routes(router);
  const paths = new Map<string, UniversalHandler>(router.handlers.map((h) => [h.requestPath, h]));
  const invoker = createInvoker(options.routes, options.interceptors);
  // What each method's request messages are checked against before Connect decodes them.
  const guarded = new Map<UniversalHandler, BodyGuardMethod>(
    router.handlers.map((h) => [
      h,
      {
        input: h.method.input,
        binaryOptions: invoker.binaryOptions(h.method),
        maxBytes: invoker.maxRequestBytes(h.method, options.maxMessageBytes),
      },
    ]),
  );
  const requestMemory = options.requestMemory ?? new RequestMemory(defaultRequestMemoryBytes());
  const handler = (req: Http2ServerRequest, res: Http2ServerResponse) => {
    const uHandler = paths.get(req.url.split("?", 1)[0]!);
    if (!uHandler) {
      res.writeHead(404);
      res.end();
      return;
    }
    let handled: Promise<unknown> | undefined;
    const uReq = guardRequestBody(
      universalRequestFromNodeRequest(req, res, undefined, early.contextValues(req)),
      guarded.get(uHandler)!,
      acceptCompression,
      // Held until the stream has closed and the handler is done, should the client go first (not
      // until its answer is written: writing to a stream the client reset may never end). The
      // handler reads the body, so it has started by then.
      (estimate) => {
        if (requestMemory.holdUntilClosed(estimate, res.stream) && handled !== undefined)
          requestMemory.whileRunning(res.stream, handled);
      },
    );
    const response = uHandler(uReq);
    handled = response;
    response
      .then(clientDecodeErrors)
      .then((uRes) => universalResponseToNodeResponse(uRes, res))
      .catch((reason: unknown) => {
        // A client gone mid-answer; anything else was already answered by the protocol handler.
        if (ConnectError.from(reason).code !== Code.Aborted)
          options.logger.warn(
            { err: reason, rpc: `${uHandler.service.typeName}/${uHandler.method.name}` },
            "writing the answer failed",
          );
      });
  };
  const wrapped = early.wrap(handler);
  const deadline = createRequestDeadline({
    timeoutMs: options.requestTimeoutMs,
    logger: options.logger,
    requestStreaming,
  });
  const server: Http2Server = createHttp2Server((req, res) => {
    // Browsers (Connect, gRPC-Web) come this way, never by the binary gRPC fast path: a preflight
    // is answered before the credential check, an allowed origin's answers carry CORS headers.
    if (options.cors?.(req.stream, req.headers)) return;
    deadline.track(res.stream, req.url, (error) => early.answerUnread(req, res, error));
    wrapped(req, res);
  });
  if (options.fastUnary || (options.undecoded?.size ?? 0) > 0) {
    // Unary binary gRPC on the raw stream (grpc-unary.ts): every such call, or with the fast path
    // off only the undecoded methods'; every other stream goes on to Node's compatibility layer
    // (its 'stream' listener, which createServer installed for the handler above) and Connect.
    const fastUnary = createGrpcUnary({
      invoker,
      maxMessageBytes: options.maxMessageBytes,
      maxTimeoutMs: MAX_TIMEOUT_MS,
      acceptCompression,
      early,
      deadline,
      logger: options.logger,
      undecoded: options.undecoded ?? new Map(),
      onlyUndecoded: !options.fastUnary,
      requestMemory,
    });
    const compat = server.listeners("stream") as ((...args: unknown[]) => void)[];
    if (compat.length !== 1) throw new Error("expected Node's HTTP/2 compatibility layer as the one 'stream' listener");
    const onCompatStream = compat[0]!;
    server.removeListener("stream", onCompatStream);
    server.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number, raw: string[]) => {
      if (!fastUnary(stream, headers)) onCompatStream.call(server, stream, headers, flags, raw);
    });
  }
  const sessions = new Set<Http2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  // The sockets under the sessions, for destroy(): Http2Session.destroy() does not finish while a
  // write to the socket is in progress, and a peer that stopped reading (a stalled client, a
  // frozen process, a stream it no longer reads) keeps that write in progress for ever. The
  // session then never closes, nor does the server (seen after the 1,000-case RPC fuzz).
  // Destroying the socket fails the write, which lets the session finish closing.
  const sockets = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
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
      // After GOAWAY, the streams the drain would wait for in vain: requests still arriving, and
      // streams closed but kept for unread data (request-deadline.ts).
      const { open, cut, released } = deadline.cut();
      options.logger.info(
        { listener: options.name, openStreams: open, cutStreams: cut, releasedStreams: released },
        "gRPC listener closing",
      );
      return closed.finally(() => deadline.stop());
    },
    destroy() {
      for (const s of sessions) s.destroy();
      for (const s of sockets) s.destroy();
    },
  };
}
