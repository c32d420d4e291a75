// The edge's transport when the services run elsewhere (SERVICES=edge, EDGE_UPSTREAM_URL): unary
// calls in binary gRPC straight on node:http2, over one reused connection; server streams (the
// google.api.HttpBody routes) through connect-node's gRPC transport.
//
// Why not connect-node's transport for unary calls too: it runs each call through Connect's
// generic client machinery (web Headers both ways, async-iterable pipelines to frame, compress,
// split and parse one message, several abort signals per call); with that, the edge process
// spent more CPU per request than the in-process edge and the split topology did a fifth of its
// throughput (BENCHMARKS.md, issue 19). A unary call needs none of it: one HEADERS and one DATA
// frame out, headers, one message and trailers back.
//
// What the edge gets is what createGrpcTransport gives it (services/edge reads the response's
// header and trailer, and a failure's code, message and metadata): a UnaryResponse with the
// response headers and trailers; a ConnectError from the status in the trailers (metadata: the
// trailers and the headers) or, for a trailers-only answer, in the headers (metadata: the
// headers); the same protocol errors. Errors that prove the call never reached a service keep
// what retry.ts looks for: REFUSED_STREAM in the message, the Node error (ECONNREFUSED,
// ERR_HTTP2_GOAWAY_SESSION) as the cause. Deadlines go out as grpc-timeout and end the call
// here too, as DEADLINE_EXCEEDED; the caller's signal cancels the stream.
//
// The connection: opened on first use, replaced when the server sends GOAWAY (a backend
// draining: its streams in flight finish on the old connection) or the connection closes. Every
// connection keeps an 'error' listener for good, so an error Node raises after the connection
// was left (connectrpc/connect-es#1768, see platform/http2-session-manager.ts) cannot end the
// process. Responses are not compressed (no grpc-accept-encoding): on this hop CPU costs more
// than bytes.
import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  connect,
  constants as h2,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from "node:http2";
import {
  create,
  type DescMessage,
  type DescMethodUnary,
  fromBinary,
  type MessageInitShape,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues, type Transport, type UnaryResponse } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  codeFromHttpStatus,
  findTrailerError,
  parseContentType,
  validateTrailer,
} from "@connectrpc/connect/protocol-grpc";
import { createHttp2SessionManager } from "../platform/http2-session-manager.js";

const ignore = () => {};

/** One reused HTTP/2 connection to the upstream, replaced after GOAWAY or when it closes. */
class Connection {
  private session: ClientHttp2Session | undefined;

  constructor(private readonly url: string) {}

  current(): ClientHttp2Session {
    const s = this.session;
    if (s !== undefined && !s.closed && !s.destroyed) return s;
    const next = connect(this.url);
    // For good: errors after this connection was left reach nobody (the calls on it got their
    // own through their streams) and must not end the process.
    next.on("error", ignore);
    const leave = () => {
      if (this.session === next) this.session = undefined;
    };
    // A draining server: new calls go to a new connection, those in flight finish here.
    next.once("goaway", leave);
    next.once("close", leave);
    // The edge's own server keeps the process alive; an idle upstream connection need not.
    next.unref();
    this.session = next;
    return next;
  }
}

/** HTTP/2's error codes by value (RFC 9113 §7). */
const H2_ERRORS = [
  "NO_ERROR",
  "PROTOCOL_ERROR",
  "INTERNAL_ERROR",
  "FLOW_CONTROL_ERROR",
  "SETTINGS_TIMEOUT",
  "STREAM_CLOSED",
  "FRAME_SIZE_ERROR",
  "REFUSED_STREAM",
  "CANCEL",
  "COMPRESSION_ERROR",
  "CONNECT_ERROR",
  "ENHANCE_YOUR_CALM",
  "INADEQUATE_SECURITY",
  "HTTP_1_1_REQUIRED",
];

/** What connect-node makes of a stream reset (node-error.ts there): retry.ts reads REFUSED_STREAM in it. */
function resetError(rstCode: number): ConnectError {
  const code =
    rstCode === h2.NGHTTP2_REFUSED_STREAM
      ? Code.Unavailable
      : rstCode === h2.NGHTTP2_CANCEL
        ? Code.Canceled
        : rstCode === h2.NGHTTP2_ENHANCE_YOUR_CALM
          ? Code.ResourceExhausted
          : Code.Internal;
  const name = H2_ERRORS[rstCode] ?? String(rstCode);
  return new ConnectError(`http/2 stream closed with error code ${name} (0x${rstCode.toString(16)})`, code);
}

/** A Node error as connect-node's transport throws it: a ConnectError with the error as its cause. */
function nodeError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  const code = (err as { code?: unknown }).code;
  const unavailable = code === "ECONNREFUSED" || code === "ETIMEDOUT" || code === "ENOTFOUND" || code === "EAI_AGAIN";
  const aborted = code === "ECONNRESET" || code === "ERR_STREAM_DESTROYED" || code === "ERR_HTTP2_INVALID_STREAM";
  const e = ConnectError.from(err, unavailable ? Code.Unavailable : aborted ? Code.Aborted : Code.Internal);
  if (e !== err) e.cause = err;
  return e;
}

function webHeaders(headers: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const name in headers) {
    if (name.charCodeAt(0) === 58 /* ':' */) continue;
    const value = headers[name];
    if (value === undefined) continue;
    if (typeof value === "string") out.append(name, value);
    else for (const v of value) out.append(name, v);
  }
  return out;
}

/** The request's header block: the caller's metadata (repeated names joined, as Headers does), then gRPC's own. */
function requestHeaders(
  path: string,
  header: Parameters<Transport["unary"]>[3],
  timeoutMs: number | undefined,
): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  const add = (name: string, value: string) => {
    const key = name.toLowerCase();
    const prev = out[key];
    out[key] = prev === undefined ? value : `${String(prev)}, ${value}`;
  };
  if (Array.isArray(header)) for (const [k, v] of header) add(k, v);
  else if (header instanceof Headers)
    header.forEach((v, k) => {
      add(k, v);
    });
  else if (header !== undefined) for (const [k, v] of Object.entries(header)) add(k, String(v));
  out[":method"] = "POST";
  out[":path"] = path;
  out["content-type"] = "application/grpc+proto";
  out["user-agent"] ??= "agentplane-edge";
  if (timeoutMs !== undefined) out["grpc-timeout"] = `${Math.ceil(timeoutMs)}m`;
  out.te = "trailers";
  return out;
}

function envelope(data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(data.byteLength + 5);
  out[0] = 0;
  out.writeUInt32BE(data.byteLength, 1);
  out.set(data, 5);
  return out;
}

/** The one response message, checked as connect-es checks it; undefined for none. */
function responseMessage<O extends DescMessage>(schema: O, body: Buffer): MessageShape<O> | undefined {
  if (body.length === 0) return undefined;
  if (body.length < 5) throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  const length = body.readUInt32BE(1);
  if (body.length < 5 + length) throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  if (body.length > 5 + length)
    throw new ConnectError("protocol error: received extra output message for unary method", Code.Unimplemented);
  if ((body[0]! & 1) === 1)
    throw new ConnectError("received compressed envelope, but do not know how to decompress", Code.Internal);
  try {
    return fromBinary(schema, body.subarray(5));
  } catch (e) {
    throw new ConnectError(`parse binary: ${e instanceof Error ? e.message : String(e)}`, Code.Internal);
  }
}

export function createUpstreamTransport(baseUrl: string): Transport {
  const connection = new Connection(baseUrl);
  const basePath = new URL(baseUrl).pathname.replace(/\/$/, "");
  // Server streams (the HttpBody routes): connect-node's transport, on its own connection.
  const streaming = createGrpcTransport({ baseUrl, sessionManager: createHttp2SessionManager(baseUrl) });

  return {
    stream: (...args) => streaming.stream(...args),
    unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: Parameters<Transport["unary"]>[3],
      input: MessageInitShape<I>,
      _contextValues?: ContextValues,
    ): Promise<UnaryResponse<I, O>> {
      // As connect-es: a deadline of zero or less is none.
      const deadlineMs = timeoutMs === undefined || timeoutMs <= 0 ? undefined : timeoutMs;
      return new Promise((resolve, reject) => {
        if (signal?.aborted) {
          reject(ConnectError.from(signal.reason, Code.Canceled));
          return;
        }
        const message = create(method.input, input);
        let stream: ClientHttp2Stream;
        try {
          const headers = requestHeaders(`${basePath}/${method.parent.typeName}/${method.name}`, header, deadlineMs);
          stream = connection.current().request(headers, { endStream: false });
        } catch (err) {
          // A connection that received GOAWAY or closed meanwhile (ERR_HTTP2_GOAWAY_SESSION):
          // the call never left, which retry.ts recognises from the cause.
          reject(nodeError(err));
          return;
        }
        let settled = false;
        let timer: NodeJS.Timeout | undefined;
        let responseHeaders: IncomingHttpHeaders | undefined;
        let trailers: IncomingHttpHeaders | undefined;
        const chunks: Buffer[] = [];
        const finish = (error: ConnectError | undefined, response?: UnaryResponse<I, O>) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          if (error !== undefined) {
            if (!stream.closed) stream.close(h2.NGHTTP2_CANCEL);
            reject(error);
          } else resolve(response!);
        };
        function onAbort() {
          finish(ConnectError.from(signal!.reason, Code.Canceled));
        }
        signal?.addEventListener("abort", onAbort);
        if (deadlineMs !== undefined)
          timer = setTimeout(
            () => finish(new ConnectError("the operation timed out", Code.DeadlineExceeded)),
            deadlineMs,
          );
        stream.on("response", (h) => {
          responseHeaders = h;
        });
        stream.on("trailers", (t) => {
          trailers = t;
        });
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("end", () => {
          if (settled) return;
          try {
            finish(undefined, answer(responseHeaders, trailers, Buffer.concat(chunks)));
          } catch (err) {
            finish(err instanceof ConnectError ? err : nodeError(err));
          }
        });
        stream.on("close", () => {
          if (settled) return;
          const code = stream.rstCode;
          finish(
            code !== undefined && code !== h2.NGHTTP2_NO_ERROR
              ? resetError(code)
              : new ConnectError("protocol error: the stream ended without an answer", Code.Internal),
          );
        });
        stream.on("error", (err: unknown) => {
          // A reset by the server, by its code (retry.ts reads REFUSED_STREAM); anything else
          // (a connection refused or lost: the stream cancelled with the cause) as connect-node
          // reports it, with the Node error as the cause.
          const peerReset = (err as { code?: unknown }).code === "ERR_HTTP2_STREAM_ERROR";
          finish(peerReset && stream.rstCode !== undefined ? resetError(stream.rstCode) : nodeError(err));
        });
        stream.end(envelope(toBinary(method.input, message)));
      });

      function answer(
        rawHeaders: IncomingHttpHeaders | undefined,
        rawTrailers: IncomingHttpHeaders | undefined,
        body: Buffer,
      ): UnaryResponse<I, O> {
        const status = Number(rawHeaders?.[":status"] ?? 0);
        const header = webHeaders(rawHeaders ?? {});
        const trailer = webHeaders(rawTrailers ?? {});
        if (status !== 200) throw new ConnectError(`HTTP ${status}`, codeFromHttpStatus(status), header);
        const contentType = header.get("content-type");
        if (parseContentType(contentType) === undefined)
          throw new ConnectError(`unsupported content type ${contentType}`, Code.Unknown);
        const headerError = findTrailerError(header);
        const encoding = header.get("grpc-encoding");
        if (encoding !== null && encoding.toLowerCase() !== "identity")
          throw new ConnectError(`unsupported response encoding "${encoding}"`, Code.Internal, header);
        const output = responseMessage(method.output, body);
        validateTrailer(trailer, header);
        if (output === undefined) {
          if (headerError) throw headerError;
          throw new ConnectError(
            "protocol error: missing output message for unary method",
            trailer.has("grpc-status") ? Code.Unimplemented : Code.Unknown,
          );
        }
        if (headerError)
          throw new ConnectError(
            "protocol error: received output message for unary method with error status",
            Code.Unknown,
          );
        return { stream: false, service: method.parent, method, header, message: output, trailer };
      }
    },
  };
}
