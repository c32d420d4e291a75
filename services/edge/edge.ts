// The TypeScript REST edge: REST/JSON → Connect RPC transcoding driven by the services'
// google.api.http annotations, behaving like Envoy's grpc_json_transcoder as configured in
// envoy.yaml (convert_grpc_status, reject_unknown_method, reject_unknown_query_parameters,
// always_print_primitive_fields, JSON names, query_param_unescape_plus=false) plus what our Lua
// filter adds there: the {title, detail, status, requestId} error body (a google.rpc.Status on
// the OTLP/HTTP paths), x-http-code → status,
// and X-Request-Id on every response.
//
// All descriptor work happens in createRestEdge; a request costs a trie walk, map lookups and
// the JSON (de)serialisation.
import type { IncomingMessage, ServerResponse } from "node:http";
import { type DescService, type Message, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type Transport } from "@connectrpc/connect";
import type { Logger } from "pino";
import { announcesBody, readJsonBody, readRawBody } from "./body.js";
import { ClientGoneError, EdgeHttpError } from "./errors.js";
import { forwardRequestHeaders } from "./headers.js";
import { openHttpBodyStream, writeHttpBodyStream } from "./http-body-stream.js";
import { refuseOutOfProportion } from "../platform/decode-errors.js";
import { requestIdFrom } from "../platform/request-id.js";
import { defaultRequestMemoryBytes, type Release, RequestMemory } from "../platform/request-memory.js";
import { buildRequestMessage } from "./request.js";
import { describeError, errorFormatOf, writeError, writeSuccess } from "./respond.js";
import { withUpstreamRetries } from "./retry.js";
import { buildRouteTable } from "./routes.js";

export interface RestEdgeOptions {
  /** The public services to route (generated `XService` descriptors). */
  services: DescService[];
  /** Transport reaching them (in-process router transport or gRPC). */
  transport: Transport;
  logger: Logger;
  /** Largest accepted request body; larger → 413. Default 1 MiB. */
  maxBodyBytes?: number;
  /**
   * The request deadline (REQUEST_TIMEOUT_MS). The body must arrive within it (else 408, as
   * Envoy's request_timeout), and the call must complete within it from the complete request
   * (else 504, as Envoy's route timeout); the transport is handed it as the call's deadline.
   */
  timeoutMs?: number;
  /**
   * Calls ("<service>/<method>") that last until the client leaves (event streams): no deadline
   * from the complete request, as envoy.yaml gives their routes `timeout: 0s`.
   */
  untimed?: ReadonlySet<string>;
  /**
   * The process's count of request messages' memory (platform/request-memory.ts), which the
   * service's gRPC listeners hold in too: a body's message is held from its building to the
   * answer, as the listener Envoy calls holds the message it decodes. By default a count of the
   * edge's own.
   */
  requestMemory?: RequestMemory;
}

export type RestEdgeHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** Splits a request target into raw path and raw query (both still percent-encoded). */
function splitTarget(url: string): [string, string] {
  let target = url;
  if (target.charCodeAt(0) !== 47 /* '/' */) {
    // absolute-form (`GET http://host/path`), which proxies may send.
    try {
      const u = new URL(target);
      target = u.pathname + u.search;
    } catch {
      return ["", ""];
    }
  }
  const q = target.indexOf("?");
  return q === -1 ? [target, ""] : [target.slice(0, q), target.slice(q + 1)];
}

/**
 * Builds the route table from `services` (throwing on an invalid annotation, so a bad .proto
 * stops the process at start) and returns the node:http request handler. The handler never
 * rejects: every failure becomes an error response.
 */
export function createRestEdge(opts: RestEdgeOptions): RestEdgeHandler {
  const { transport, logger, timeoutMs } = opts;
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const requestMemory = opts.requestMemory ?? new RequestMemory(defaultRequestMemoryBytes());
  const table = buildRouteTable(opts.services);
  logger.debug({ routes: table.routes.map((r) => `${r.httpMethod} ${r.template.source}`) }, "REST edge routes");

  return async function handleRest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = requestIdFrom(req.headers["x-request-id"]);
    const method = req.method ?? "GET";
    const [path, query] = splitTarget(req.url ?? "/");
    // A client that disconnects before the answer cancels the RPC.
    const abort = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) abort.abort(new ClientGoneError("client disconnected"));
    };
    res.once("close", onClose);
    let rpc: string | undefined;
    let deadline: NodeJS.Timeout | undefined;
    let release: Release | undefined;
    let running: Promise<unknown> | undefined;
    try {
      const match = table.matcher.lookup(method, path);
      if (match === undefined) {
        // Envoy's reject_unknown_method answer, reshaped like every other error.
        throw new EdgeHttpError(404, `Could not resolve ${path} to a method.`);
      }
      const route = match.route;
      rpc = `${route.method.parent.typeName}/${route.method.name}`;
      // Without a body rule the body is ignored, as Envoy does (the answer then closes the
      // connection rather than wait for a body that may never come; see below).
      let input: Message;
      if (route.rawBody) {
        // google.api.HttpBody: the bytes and their Content-Type, as Envoy's transcoder passes them.
        const data = await withinDeadline(req, timeoutMs, (signal) => readRawBody(req, maxBodyBytes, signal));
        input = buildRequestMessage(route, table.fields, match.parts, query, undefined);
        Object.assign(input, { contentType: req.headers["content-type"] ?? "", data });
      } else {
        const body = route.body.kind === "none" ? undefined : await readBody(req, maxBodyBytes, timeoutMs);
        input = buildRequestMessage(route, table.fields, match.parts, query, body);
        // Refused, or held, as the service's gRPC listener refuses or holds the binary message
        // Envoy's transcoder makes of the same body, so that both edges answer such bodies alike.
        // From the body's parse to here nothing else runs (only microtasks between), so no other
        // request's parsed body is alive beside this one: the count starts here, with the message.
        if (body !== undefined)
          release = requestMemory.hold(refuseOutOfProportion(route.method.input, toBinary(route.method.input, input)));
      }
      // The deadline (Envoy's route timeout) runs from the complete request. The transport only
      // hands it to the handler, which may not watch it (an in-process call, a query waiting on
      // Postgres), so the edge enforces it here: the answer is a 504 at the deadline.
      const callTimeoutMs = opts.untimed?.has(rpc) ? undefined : timeoutMs;
      if (callTimeoutMs !== undefined) {
        deadline = setTimeout(
          () =>
            abort.abort(
              new ConnectError(`the request did not complete within ${callTimeoutMs} ms`, Code.DeadlineExceeded),
            ),
          callTimeoutMs,
        );
      }
      const headers = forwardRequestHeaders(req.headers, requestId, req.socket.remoteAddress);
      if (route.call.kind === "http_body_stream") {
        const stream = await untilAborted(
          withUpstreamRetries(
            () => openHttpBodyStream(transport, route, abort.signal, callTimeoutMs, headers, input),
            abort.signal,
          ),
          abort.signal,
        );
        if (abort.signal.aborted) throw abort.signal.reason;
        if (unreadBody(req)) res.setHeader("connection", "close");
        await writeHttpBodyStream(res, route, stream, requestId, logger, abort.signal);
        return;
      }
      const unary = route.call.method;
      const call = withUpstreamRetries(
        () => transport.unary(unary, abort.signal, callTimeoutMs, headers, input),
        abort.signal,
      );
      running = call;
      const result = await untilAborted(call, abort.signal);
      if (abort.signal.aborted) throw abort.signal.reason;
      if (unreadBody(req)) res.setHeader("connection", "close");
      writeSuccess(res, route, result, requestId, logger, req.headers["accept-encoding"]);
    } catch (err) {
      const parts = describeError(err);
      const gone = abort.signal.reason instanceof ClientGoneError || err instanceof ClientGoneError || res.destroyed;
      const log = { requestId, method, path, rpc, status: gone ? 499 : parts.status };
      if (gone) {
        // 499, as Envoy logs it; there is nobody left to send it to.
        logger.info(log, "client disconnected before the response");
        return;
      }
      if (!(err instanceof EdgeHttpError) && !(err instanceof ConnectError)) {
        logger.error({ ...log, err }, "unexpected error in the REST edge");
      } else if (parts.status >= 500) {
        logger.warn({ ...log, err }, "RPC failed");
      }
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (unreadBody(req)) res.setHeader("connection", "close");
      const format = errorFormatOf(path, req.headers["content-type"]);
      try {
        writeError(res, parts, requestId, format);
      } catch (writeErr) {
        // e.g. service metadata node:http refuses as a header value: answer without it.
        logger.error({ ...log, err: writeErr }, "could not write the error response");
        if (!res.headersSent) writeError(res, { ...parts, metadata: undefined }, requestId, format);
      }
    } finally {
      // What the message holds is given back once the call is over too: an in-process call may go
      // on with it after the client has gone.
      if (release !== undefined) {
        if (running === undefined) release();
        else running.then(release, release);
      }
      clearTimeout(deadline);
      res.off("close", onClose);
    }
  };
}

/**
 * The body, read within the request deadline: a body shorter than its Content-Length, or one
 * trickled a byte at a time, is answered 408 at the deadline instead of holding the connection
 * for as long as the client likes (Envoy's request_timeout).
 */
async function readBody(req: IncomingMessage, maxBodyBytes: number, timeoutMs: number | undefined): Promise<unknown> {
  return withinDeadline(req, timeoutMs, (signal) => readJsonBody(req, maxBodyBytes, signal));
}

async function withinDeadline<T>(
  req: IncomingMessage,
  timeoutMs: number | undefined,
  read: (signal: AbortSignal | undefined) => Promise<T>,
): Promise<T> {
  if (timeoutMs === undefined || !announcesBody(req)) return read(undefined);
  const deadline = new AbortController();
  const timer = setTimeout(
    () => deadline.abort(new EdgeHttpError(408, `the request body was not received within ${timeoutMs} ms`)),
    timeoutMs,
  );
  try {
    return await read(deadline.signal);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Answered before the whole body was read (an unknown route, a bad query, a route without a body
 * rule, the 408 above): the connection closes with the answer, rather than let node:http read
 * and discard a body of any size, at any pace, to reuse it.
 */
function unreadBody(req: IncomingMessage): boolean {
  return announcesBody(req) && !req.complete;
}

/** The call's result, or the signal's reason as soon as it aborts (whichever comes first). */
function untilAborted<T>(call: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
    call.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error as Error);
      },
    );
  });
}
