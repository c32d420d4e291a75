// Credentials are checked from the headers before a byte of the body is read.
//
// Connect's handlers read a unary request's whole message before any interceptor runs, so the
// auth interceptor alone would let an unauthenticated client make the server buffer a body up to
// the size limit (32 MiB) per stream, on many streams at once. This wraps the listener's request
// handler: it resolves the caller from the Authorization header first and answers a refusal
// itself, in the protocol the client speaks (gRPC, gRPC-Web, Connect), without reading the body;
// the stream is then reset with NO_ERROR (RFC 9113 §8.1), so the client stops sending. An
// accepted caller is handed to the interceptors through a context value, so the call is not
// authenticated twice.
import type { Http2ServerRequest, Http2ServerResponse, IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { constants as h2 } from "node:http2";
import { requestIdFrom } from "./request-id.js";
import { type ConnectError, createContextValues, type ContextValues } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import type { DescService } from "@bufbuild/protobuf";
import {
  codeToHttpStatus,
  contentTypeStreamRegExp,
  contentTypeUnaryRegExp,
  endStreamFlag,
  endStreamToJson,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
import { contentTypeRegExp as grpcContentType, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import {
  contentTypeRegExp as grpcWebContentType,
  trailerFlag,
  trailerSerialize,
} from "@connectrpc/connect/protocol-grpc-web";
import {
  authenticateCall,
  clientAddressOf,
  kAuthenticated,
  type Authenticated,
  type AuthPolicy,
  type Authenticator,
} from "./auth.js";
import { toConnectError } from "./errors.js";
import type { Logger } from "./logger.js";

type NodeHandler = (req: Http2ServerRequest, res: Http2ServerResponse) => void;

export interface EarlyAuthOptions {
  readonly authenticator: Authenticator;
  /** The policies of the services this listener serves; other paths pass through (to a 404). */
  readonly policies: ReadonlyMap<string, AuthPolicy>;
  /** The services this listener serves: which protocols each method's requests may speak. */
  readonly services: readonly DescService[];
  /** Take the client's address from X-Forwarded-For (the public listener, behind the edge). */
  readonly trustForwardedFor: boolean;
  readonly logger: Logger;
}

export interface EarlyAuth {
  /** Wraps the Connect adapter's handler. */
  wrap(handler: NodeHandler): NodeHandler;
  /** The adapter's `contextValues` option: carries the accepted caller to the interceptors. */
  contextValues(req: unknown): ContextValues;
  /**
   * Answers `error` without reading the body, as a refused credential is (request-deadline.ts:
   * a request that did not arrive in time); a request in no protocol its method speaks is reset.
   */
  answerUnread(req: Http2ServerRequest, res: Http2ServerResponse, error: ConnectError): void;
  /**
   * For a gRPC call served on the raw stream (grpc-unary.ts): the accepted caller, or undefined
   * when the service is open; a refusal is answered here (as `wrap` does) and rejects.
   */
  checkGrpc(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, rpc: RpcName): Promise<Authenticated | undefined>;
}

/** [service, method] of a call. */
export type RpcName = readonly [string, string];

/** A refusal already answered to the client by early auth: nothing more to do with the call. */
export class Refused extends Error {}

/** `/pkg.Service/Method` → [service, method], or undefined for any other path. */
function rpcOf(url: string | undefined): [string, string] | undefined {
  if (url === undefined) return undefined;
  const path = url.split("?", 1)[0]!;
  const slash = path.indexOf("/", 1);
  if (path.charCodeAt(0) !== 47 || slash === -1 || path.indexOf("/", slash + 1) !== -1) return undefined;
  return [path.slice(1, slash), path.slice(slash + 1)];
}

/** How a refusal is written: the protocol a request speaks, if it speaks one the method takes. */
export type Protocol = "grpc" | "grpc-web" | "connect-unary" | "connect-stream";

function protocolOf(method: string | undefined, contentType: string, unary: boolean): Protocol | undefined {
  if (grpcContentType.test(contentType)) return "grpc";
  // gRPC-Web text (base64) frames are not written here: connect-es answers those itself.
  if (grpcWebContentType.test(contentType) && !/^application\/grpc-web-text/i.test(contentType)) return "grpc-web";
  if (unary && (method === "GET" || contentTypeUnaryRegExp.test(contentType))) return "connect-unary";
  if (!unary && contentTypeStreamRegExp.test(contentType)) return "connect-stream";
  return undefined;
}

export function createEarlyAuth(options: EarlyAuthOptions): EarlyAuth {
  const accepted = new WeakMap<object, Authenticated>();
  const unary = new Map<string, boolean>();
  for (const s of options.services)
    for (const m of s.methods) unary.set(`${s.typeName}/${m.name}`, m.methodKind === "unary");
  const protocolFor = (req: Http2ServerRequest, rpc: [string, string] | undefined) => {
    const isUnary = rpc && unary.get(`${rpc[0]}/${rpc[1]}`);
    return isUnary === undefined ? undefined : protocolOf(req.method, req.headers["content-type"] ?? "", isUnary);
  };
  return {
    answerUnread(req, res, error) {
      const protocol = protocolFor(req, rpcOf(req.url));
      if (protocol !== undefined) refuse(req.headers, res.stream, error, protocol);
      else if (!res.stream.closed) res.stream.close(h2.NGHTTP2_CANCEL);
    },
    contextValues(req) {
      const values = createContextValues();
      const found = accepted.get(req as object);
      if (found !== undefined) values.set(kAuthenticated, found);
      return values;
    },
    wrap(handler) {
      return (req, res) => {
        const rpc = rpcOf(req.url);
        const policy = rpc && options.policies.get(rpc[0]);
        // Open services, unknown paths, and requests in no protocol the method speaks (which
        // connect-es refuses from their headers, 415 or 405) go straight on.
        const protocol = protocolFor(req, rpc);
        if (!rpc || !policy || policy.kind === "open" || protocol === undefined) return handler(req, res);
        check(policy, req.headers, req.socket?.remoteAddress, rpc, (error) =>
          refuse(req.headers, res.stream, error, protocol),
        )
          .then((caller) => {
            accepted.set(req, caller);
            handler(req, res);
          }, ignoreRefused)
          // Nothing of a single call may end the process: whatever escaped, that stream is reset.
          .catch((err: unknown) => {
            options.logger.error({ err, rpc: `${rpc[0]}/${rpc[1]}` }, "answering a call failed");
            if (!res.stream.destroyed) res.stream.destroy();
          });
      };
    },
    async checkGrpc(stream, headers, rpc) {
      const policy = options.policies.get(rpc[0]);
      if (!policy || policy.kind === "open") return undefined;
      return check(policy, headers, stream.session?.socket?.remoteAddress, rpc, (error) =>
        refuse(headers, stream, error, "grpc"),
      );
    },
  };

  /** Resolves the caller from the headers; a refusal is logged and answered by `answer`, and rejects with Refused. */
  async function check(
    policy: AuthPolicy,
    headers: IncomingHttpHeaders,
    remoteAddress: string | undefined,
    rpc: RpcName,
    answer: (error: ConnectError) => void,
  ): Promise<Authenticated> {
    const started = performance.now();
    const forwarded = headers["x-forwarded-for"];
    try {
      const caller = await authenticateCall(options.authenticator, policy, {
        service: rpc[0],
        method: rpc[1],
        authorization: headers.authorization,
        clientAddress: clientAddressOf(
          typeof forwarded === "string" ? forwarded : undefined,
          remoteAddress,
          options.trustForwardedFor,
        ),
      });
      return { caller };
    } catch (err) {
      const { error, internal } = toConnectError(err);
      const requestId = requestIdFrom(headers["x-request-id"]);
      error.metadata.set("x-request-id", requestId);
      const log = options.logger.child({ requestId, rpc: `${rpc[0]}/${rpc[1]}` });
      const fields = { code: error.code, ms: Math.round(performance.now() - started), phase: "before body" };
      if (internal) log.error({ ...fields, err }, "rpc failed");
      else log.info({ ...fields, reason: error.rawMessage }, "rpc");
      answer(error);
      throw new Refused();
    }
  }
}

function ignoreRefused(err: unknown): void {
  if (!(err instanceof Refused)) throw err;
}

/** Answers `error` in the request's protocol without reading its body, then resets the stream. */
export function refuse(
  requestHeaders: IncomingHttpHeaders,
  stream: ServerHttp2Stream,
  error: ConnectError,
  protocol: Protocol,
): void {
  // The client may have gone (cancelled, reset, connection lost) while the credential was being
  // checked: there is nobody to answer.
  if (stream.headersSent || stream.destroyed || stream.closed) return;
  const contentType = (requestHeaders["content-type"] ?? "").toLowerCase();
  const headers = new Headers();
  let status = 200;
  let body: Uint8Array | undefined;
  if (protocol === "grpc-web") {
    // gRPC-Web: the status travels in a trailer frame of the body.
    headers.set(
      "content-type",
      contentType.startsWith("application/grpc-web+json") ? "application/grpc-web+json" : "application/grpc-web+proto",
    );
    body = encodeEnvelope(trailerFlag, trailerSerialize(setTrailerStatus(new Headers(), error)));
  } else if (protocol === "grpc") {
    // gRPC: a trailers-only response (the status in the headers, no body).
    headers.set(
      "content-type",
      contentType.startsWith("application/grpc+json") ? "application/grpc+json" : "application/grpc",
    );
    setTrailerStatus(headers, error);
  } else if (protocol === "connect-stream") {
    // Connect streaming: an end-of-stream frame carries the error.
    headers.set(
      "content-type",
      contentType.startsWith("application/connect+json") ? "application/connect+json" : "application/connect+proto",
    );
    body = encodeEnvelope(
      endStreamFlag,
      new TextEncoder().encode(JSON.stringify(endStreamToJson(error.metadata, error, undefined))),
    );
  } else {
    // Connect unary: the HTTP status and the JSON error body.
    status = codeToHttpStatus(error.code);
    headers.set("content-type", "application/json");
    for (const [key, value] of error.metadata) headers.set(key, value);
    body = errorToJsonBytes(error, undefined);
  }
  // The raw stream, so a gRPC trailers-only answer is one HEADERS frame with END_STREAM, as
  // gRPC clients require (the compatibility API would send the headers and an empty DATA frame).
  const out: Record<string, string> = { ":status": String(status) };
  headers.forEach((value, key) => {
    out[key] = value;
  });
  // The body was never read: once answered, tell a client still sending it to stop, without an
  // error (a client that finished sending needs nothing more).
  const reset = () => {
    if (!stream.closed && stream.state.remoteClose !== 1) stream.close(h2.NGHTTP2_NO_ERROR);
  };
  stream.once("finish", reset);
  try {
    if (body === undefined) {
      stream.respond(out, { endStream: true });
    } else {
      stream.respond(out);
      stream.end(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
    }
  } catch {
    // The stream went away between the check above and now (a reset arriving meanwhile): the
    // same as above, nobody to answer. Never let it escape: it would end the process.
    stream.destroy();
  }
}
