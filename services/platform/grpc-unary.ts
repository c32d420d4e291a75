// Unary calls in binary gRPC, served on Node's raw HTTP/2 stream instead of Connect's protocol
// handler over Node's compatibility layer.
//
// Why: on that path each call went through connect-node's request and response adapters (Node's
// Http2ServerRequest/Response, web Headers both ways), Connect's async-iterable pipeline (split,
// decompress, parse, invoke, serialize, compress, join), several abort signals, and one
// DOMException from aborting the call's signal at its end: direct gRPC cost about twice the
// in-process REST edge's service CPU per GetSession (BENCHMARKS.md, "Issue 19"). Here a call
// reads its body from the stream, parses the 5-byte envelope, decodes, runs the interceptors and
// the implementation (invoke.ts, as the in-process edge does), encodes, and answers HEADERS,
// DATA and trailers with the stream API.
//
// What it answers is what the Connect path answers for the same request (test/grpc-unary.test.ts
// compares them): the same headers (content type, grpc-encoding when the response is compressed,
// the call's response headers) and trailers (grpc-status, the percent-encoded grpc-message, the
// error's metadata: request id, rate-limit headers), the same messages for protocol errors
// (message too large, incomplete envelope, missing or extra message, a message that does not
// decode, answered INVALID_ARGUMENT as decode-errors.ts does), errors from the request itself
// answered before the interceptors as Connect does (so neither logged nor given a request id),
// the call's deadline from grpc-timeout. Early auth runs before the body is read, and the request
// deadline (request-deadline.ts) tracks these streams as the others.
//
// What it takes: POST, a unary method this listener serves, `application/grpc` or
// `application/grpc+proto`, compressed or not. Everything else — gRPC-Web, Connect, JSON,
// streaming methods, unknown paths — goes to the Connect path (grpc-listener.ts). A compressed
// message is decompressed asynchronously, within the message limit, once the request has ended.
//
// Before a message is decoded, its decoded size is estimated from its bytes (decoded-size.ts): a
// message that would take more than DECODE_FACTOR times its bytes (and a megabyte) once decoded
// is refused, INVALID_ARGUMENT naming the field, and never built. Connect's handler has no such
// check (it decodes with no hook before), which is why this path takes compressed calls too. The
// estimate is then held in the process's count (request-memory.ts) until the stream has closed and
// the implementation has returned: a message that does not fit beside those held is refused,
// UNAVAILABLE, and not built either.
//
// Undecoded methods (undecoded.ts) are the exception: this path serves their binary gRPC calls
// with the fast path turned off too (`onlyUndecoded`), because Connect's handler would decode
// them. Their message is handed over as bytes in the context; the implementation gets an empty
// request message. For them there is no Connect path to answer as: a message that does not
// decode is the implementation's to refuse, after the interceptors, with its own limit.
import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { constants as h2 } from "node:http2";
import { create, fromBinary, toBinary, type DescMethod, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type MethodImplSpec } from "@connectrpc/connect";
import { compressionNegotiate, envelopeCompress, type Compression } from "@connectrpc/connect/protocol";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { kAuthenticated, type Authenticated } from "./auth.js";
import { clientDecodeError, refuseOutOfProportion } from "./decode-errors.js";
import { Refused, refuse, type EarlyAuth } from "./early-auth.js";
import { asConnectError, CALL_FINISHED, createCallContext, type CallContext, type Invoker } from "./invoke.js";
import type { Logger } from "./logger.js";
import type { RequestDeadline } from "./request-deadline.js";
import type { RequestMemory } from "./request-memory.js";
import { kUndecodedRequest } from "./undecoded.js";

/** The binary gRPC content types; `+json` goes to Connect. */
const BINARY_GRPC = /^application\/grpc(?:\+proto)?$/i;
const CONTENT_TYPE_PROTO = "application/grpc+proto";
/** Connect's default: smaller responses are not worth compressing. */
const COMPRESS_MIN_BYTES = 1024;
const COMPRESSED_FLAG = 1;
const ACCEPT_ENCODING = "grpc-accept-encoding";

export interface GrpcUnaryOptions {
  readonly invoker: Invoker;
  /** Largest request message, in bytes (the Connect path's readMaxBytes). */
  readonly maxMessageBytes: number;
  /** The longest deadline a call may ask for (the Connect path's maxTimeoutMs). */
  readonly maxTimeoutMs: number;
  /** The response compressions, in the Connect path's order. */
  readonly acceptCompression: readonly Compression[];
  readonly early: EarlyAuth;
  readonly deadline: RequestDeadline;
  readonly logger: Logger;
  /** The gRPC paths of the undecoded methods (undecoded.ts), with their largest message. */
  readonly undecoded: ReadonlyMap<string, number>;
  /** Takes the undecoded methods' calls alone (GRPC_UNARY_FAST_PATH off). */
  readonly onlyUndecoded: boolean;
  /** The process's count of request messages' memory, held from decoding to the end of the call. */
  readonly requestMemory: RequestMemory;
}

type UnarySpec = Extract<MethodImplSpec, { kind: "unary" }>;

/** Why the stream closed before the call was answered, as connect-node tells a handler (node-error.ts there). */
function closedEarly(rstCode: number): ConnectError {
  const code =
    rstCode === h2.NGHTTP2_CANCEL || rstCode === h2.NGHTTP2_NO_ERROR
      ? Code.Canceled
      : rstCode === h2.NGHTTP2_REFUSED_STREAM
        ? Code.Unavailable
        : rstCode === h2.NGHTTP2_ENHANCE_YOUR_CALM
          ? Code.ResourceExhausted
          : Code.Internal;
  return new ConnectError(`http/2 stream closed with error code 0x${rstCode.toString(16)}`, code);
}

/** A Headers object as the header block for stream.respond / sendTrailers. */
function headerBlock(headers: Headers, into: Record<string, string | string[]>): Record<string, string | string[]> {
  headers.forEach((value, name) => {
    into[name] = value;
  });
  return into;
}

/** The request's headers for the handler context: pseudo-headers dropped, as connect-node does. */
function requestHeaders(headers: IncomingHttpHeaders): [string, string][] {
  const out: [string, string][] = [];
  for (const name in headers) {
    if (name.charCodeAt(0) === 58 /* ':' */) continue;
    const value = headers[name];
    if (value === undefined) continue;
    if (typeof value === "string") out.push([name, value]);
    else for (const v of value) out.push([name, v]);
  }
  return out;
}

/**
 * Returns the listener's 'stream' handler for the fast path: true when it took the stream, false
 * when the stream is for the Connect path.
 */
export function createGrpcUnary(
  options: GrpcUnaryOptions,
): (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => boolean {
  const { invoker, maxMessageBytes } = options;
  const methods = new Map<string, Served>();
  const add = (method: DescMethod) => {
    const spec = invoker.spec(method);
    const path = `/${method.parent.typeName}/${method.name}`;
    // A method registered with a smaller readMaxBytes keeps it here too; an undecoded one has its own.
    const undecodedLimit = options.undecoded.get(path);
    if (spec?.kind === "unary")
      methods.set(path, {
        spec,
        rpc: [method.parent.typeName, method.name],
        maxBytes:
          undecodedLimit === undefined
            ? invoker.maxRequestBytes(method, maxMessageBytes)
            : Math.min(maxMessageBytes, undecodedLimit),
        undecoded: options.undecoded.has(path),
      });
  };
  for (const method of invoker.methods()) add(method);
  // A misspelt or streaming method named undecoded would be decoded by Connect after all.
  for (const path of options.undecoded.keys())
    if (!methods.get(path)?.undecoded) throw new Error(`${path} is named undecoded but is no unary method served here`);

  return (stream, headers) => {
    if (headers[":method"] !== "POST") return false;
    // Without a query string, as Connect's handler routes it.
    const path = headers[":path"]?.split("?", 1)[0];
    const entry = path === undefined ? undefined : methods.get(path);
    if (entry === undefined || (options.onlyUndecoded && !entry.undecoded)) return false;
    const contentType = headers["content-type"];
    if (contentType === undefined || !BINARY_GRPC.test(contentType)) return false;
    serve(stream, headers, path!, entry);
    return true;
  };

  function serve(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, path: string, served: Served): void {
    const { rpc } = served;
    // A stream reset (by the client, or by a stop: request-deadline.ts) emits 'error', which
    // unheard would end the process; the call learns of it from 'close' (call()), as the
    // compatibility layer's own listener does for the Connect path.
    stream.on("error", drop);
    options.deadline.track(stream, path, (error) => refuse(headers, stream, error, "grpc"));
    // The body is read only once the caller is accepted (early-auth.ts): nothing reads the
    // stream until call() does, so it waits within HTTP/2 flow control.
    options.early.checkGrpc(stream, headers, rpc).then(
      (caller) => call(stream, headers, path, served, caller),
      (err: unknown) => {
        if (err instanceof Refused) return;
        options.logger.error({ err, rpc: `${rpc[0]}/${rpc[1]}` }, "answering a call failed");
        if (!stream.destroyed) stream.destroy();
      },
    );
  }

  function call(
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    path: string,
    { spec, maxBytes, undecoded }: Served,
    caller: Authenticated | undefined,
  ): void {
    if (stream.destroyed || stream.closed) return;
    const timeoutHeader = headers["grpc-timeout"];
    const timeout = parseTimeout(timeoutHeader === undefined ? null : String(timeoutHeader), options.maxTimeoutMs);
    const accepted = headers[ACCEPT_ENCODING];
    const requested = headers["grpc-encoding"];
    const compression = compressionNegotiate(
      options.acceptCompression as Compression[],
      typeof requested === "string" ? requested : null,
      typeof accepted === "string" ? accepted : (accepted?.join(",") ?? null),
      ACCEPT_ENCODING,
    );
    const responseHeader: Record<string, string> = { "content-type": CONTENT_TYPE_PROTO };
    if (compression.response) responseHeader["grpc-encoding"] = compression.response.name;
    const contextValues = createContextValues();
    if (caller !== undefined) contextValues.set(kAuthenticated, caller);
    const context = createCallContext(spec.method, {
      protocolName: "grpc",
      url: `http://${headers[":authority"] ?? "localhost"}${path}`,
      signal: undefined,
      // A refused timeout is answered at once, below: no timer for it (Node would cut one past
      // 2^31 - 1 ms to 1 ms).
      timeoutMs: timeout.error ? undefined : timeout.timeoutMs,
      header: requestHeaders(headers),
      contextValues,
      responseHeader,
      responseTrailer: { "grpc-status": "0" },
    });
    let answered = false;
    // A client gone before the answer (RST_STREAM, a lost connection) aborts the call, as
    // Connect's request signal does.
    const onClose = () => {
      if (!answered) context.abort(closedEarly(stream.rstCode ?? h2.NGHTTP2_CANCEL));
    };
    stream.once("close", onClose);
    const fail = (err: unknown) => {
      if (answered) return;
      answered = true;
      context.abort(CALL_FINISHED);
      answer(stream, context, undefined, clientDecodeError(asConnectError(err)));
    };
    // Errors of the request itself come before its body is read, in Connect's order: an
    // encoding it does not have, then the timeout header.
    if (compression.error) {
      fail(compression.error);
      return;
    }
    if (timeout.error) {
      fail(timeout.error);
      return;
    }

    // The envelope: flags (1 byte) and length (4 bytes, big endian), then the message. Bytes
    // are kept as they arrive and joined once a message is complete.
    const chunks: Buffer[] = [];
    let buffered = 0;
    let length = -1;
    let flags = 0;
    let message: Message | undefined;
    /** A compressed message, or an undecoded method's, as it came, and whether its envelope says compressed. */
    let pending: { data: Uint8Array; compressed: boolean } | undefined;
    let received = 0;
    /** A second message came after a compressed first one, whose errors are being looked for. */
    let refusing = false;
    /** The message is held in the process's count (request-memory.ts). */
    let held = false;
    const onData = (chunk: Buffer) => {
      if (answered) return;
      chunks.push(chunk);
      buffered += chunk.length;
      try {
        for (;;) {
          if (length < 0) {
            if (buffered < 5) return;
            const head = chunks.length === 1 || chunks[0]!.length >= 5 ? chunks[0]! : Buffer.concat(chunks);
            flags = head[0]!;
            length = head.readUInt32BE(1);
            if (length > maxBytes)
              throw new ConnectError(
                `message size ${length} is larger than configured readMaxBytes ${maxBytes}`,
                Code.ResourceExhausted,
              );
          }
          if (buffered < 5 + length) return;
          const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, buffered);
          const data = all.subarray(5, 5 + length);
          chunks.length = 0;
          if (buffered > 5 + length) chunks.push(all.subarray(5 + length));
          buffered -= 5 + length;
          length = -1;
          const compressed = (flags & COMPRESSED_FLAG) === COMPRESSED_FLAG;
          if (compressed && compression.request === null)
            throw new ConnectError("received compressed envelope, but do not know how to decompress", Code.Internal);
          if (++received > 1 && pending?.compressed && !undecoded) {
            // Connect decompresses and decodes the first message before it finds a second: its
            // errors come first.
            const first = pending;
            refusing = true;
            stopReading();
            requestBytes(first)
              .then(decode)
              .then(
                () => fail(extraMessage()),
                (err: unknown) => fail(err),
              );
            return;
          }
          if (undecoded || compressed) {
            if (received > 1) throw extraMessage();
            pending = { data, compressed };
            continue;
          }
          const parsed = decode(data);
          if (received > 1) throw extraMessage();
          message = parsed;
        }
      } catch (err) {
        stopReading();
        fail(err);
      }
    };
    const onEnd = () => {
      if (answered || refusing) return;
      if (buffered > 0) return fail(new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument));
      if (message === undefined && pending === undefined)
        return fail(new ConnectError("protocol error: missing input message for unary method", Code.Unimplemented));
      const run = (decoded: Message) => {
        const call = invoker.unary(spec, context, decoded);
        // The message stays held while the implementation runs, should the client go first.
        if (held) options.requestMemory.whileRunning(stream, call);
        return call;
      };
      const invoked =
        pending === undefined
          ? run(message!)
          : requestBytes(pending).then((bytes) => {
              // A client gone while the message was decompressed: no call to make.
              if (context.signal.aborted) throw context.signal.reason;
              if (!undecoded) return run(decode(bytes));
              context.values.set(kUndecodedRequest, bytes);
              return invoker.unary(spec, context, create(spec.method.input));
            });
      invoked.then(
        (res) => {
          if (answered) return;
          answered = true;
          context.abort(CALL_FINISHED);
          answer(stream, context, res.message, undefined, compression.response);
        },
        (err: unknown) => fail(err),
      );
    };
    /** A pending message's bytes, decompressed within the message limit (Connect's errors when not). */
    const requestBytes = async ({ data, compressed }: { data: Uint8Array; compressed: boolean }) =>
      compressed ? compression.request!.decompress(data, maxBytes) : data;
    /** The request message, unless its decoded size is out of proportion to its bytes. */
    const decode = (data: Uint8Array): Message => {
      const binaryOptions = invoker.binaryOptions(spec.method);
      held = options.requestMemory.holdUntilClosed(
        refuseOutOfProportion(spec.method.input, data, binaryOptions),
        stream,
      );
      try {
        return fromBinary(spec.method.input, data, binaryOptions);
      } catch (e) {
        throw new ConnectError(`parse binary: ${e instanceof Error ? e.message : String(e)}`, Code.Internal);
      }
    };
    // Once answered, the rest of the request is read and dropped, as it arrives (no memory
    // held); a client that never ends it is ended by the request deadline.
    const stopReading = () => {
      stream.off("data", onData);
      stream.on("data", drop);
    };
    // A request without a body (END_STREAM on its headers) may have ended while the caller was
    // being authenticated: Node emits its 'end' unasked, and nobody heard it.
    if (stream.readableEnded) {
      onEnd();
      return;
    }
    stream.on("data", onData);
    stream.once("end", onEnd);
    stream.resume();
  }

  /** Writes the answer: headers, the message (if any) in its envelope, trailers with the status. */
  function answer(
    stream: ServerHttp2Stream,
    context: CallContext,
    output: Parameters<typeof toBinary>[1] | undefined,
    error: ConnectError | undefined,
    compression?: Compression | null,
  ): void {
    if (output === undefined) {
      write(stream, context, undefined, error);
      return;
    }
    let bytes: Uint8Array;
    try {
      bytes = toBinary(context.method.output, output, invoker.binaryOptions(context.method));
    } catch (e) {
      const m = e instanceof Error ? e.message : String(e);
      write(stream, context, undefined, new ConnectError(`serialize binary: ${m}`, Code.Internal));
      return;
    }
    if (compression && bytes.byteLength >= COMPRESS_MIN_BYTES) {
      envelopeCompress({ flags: 0, data: bytes }, compression, COMPRESS_MIN_BYTES).then(
        (env) => write(stream, context, envelope(env.flags, env.data), undefined),
        (err: unknown) => write(stream, context, undefined, asConnectError(err)),
      );
      return;
    }
    write(stream, context, envelope(0, bytes), undefined);
  }

  function write(
    stream: ServerHttp2Stream,
    context: CallContext,
    body: Buffer | undefined,
    error: ConnectError | undefined,
  ): void {
    // The client may have gone meanwhile: nobody to answer.
    if (stream.destroyed || stream.closed || stream.headersSent) return;
    const trailer = context.responseTrailer;
    if (error !== undefined) setTrailerStatus(trailer, error);
    const head = headerBlock(context.responseHeader, { ":status": "200" });
    try {
      stream.respond(head, { waitForTrailers: true });
      stream.once("wantTrailers", () => {
        try {
          stream.sendTrailers(headerBlock(trailer, {}));
        } catch {
          stream.destroy();
        }
      });
      stream.end(body);
    } catch (err) {
      // The stream went away between the check above and now (a reset arriving meanwhile).
      // Never let it escape: it would end the process.
      options.logger.warn(
        { err, rpc: `${context.service.typeName}/${context.method.name}` },
        "writing the answer failed",
      );
      stream.destroy();
    }
  }
}

/** A unary method this path serves. */
interface Served {
  readonly spec: UnarySpec;
  readonly rpc: readonly [string, string];
  /** Largest request message, after decompression. */
  readonly maxBytes: number;
  /** Handed over undecoded (undecoded.ts). */
  readonly undecoded: boolean;
}

/** A second message on a unary call, as Connect refuses it. */
const extraMessage = () =>
  new ConnectError("protocol error: received extra input message for unary method", Code.Unimplemented);

function drop(): void {}

function envelope(flags: number, data: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(data.byteLength + 5);
  out[0] = flags;
  out.writeUInt32BE(data.byteLength, 1);
  out.set(data, 5);
  return out;
}
