// Writing the HTTP response: success (status from x-http-code, JSON with every implicit field
// printed, service headers forwarded) and errors (one body shape for all of them).
import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import { toJson, toJsonString, type DescMessage, type JsonObject, type Message } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import { ENVOY_JSON_OPTIONS } from "../platform/printed-json.js";
import { compressLikeEnvoy } from "../platform/compressor.js";
import { CONTENT_TYPES, encodeStatus, encodingOf, OTLP_HTTP_PATHS, type OtlpEncoding } from "../platform/otlp-http.js";
import { EdgeHttpError, errorBody } from "./errors.js";
import { copyResponseMetadata } from "./headers.js";
import type { Route } from "./routes.js";
import { httpStatusFromCode } from "./status.js";

const STATUS_RE = /^[1-5]\d\d$/;

export interface RpcResult {
  readonly header: Headers;
  readonly trailer: Headers;
  readonly message: Message;
}

function serialize(route: Route, output: DescMessage, message: Message): string {
  if (route.responseField === undefined) return toJsonString(output, message, ENVOY_JSON_OPTIONS);
  // response_body: the named field alone. An unset message field has no JSON value; like
  // protobuf's JSON writer for an absent root we print null.
  const json = toJson(output, message, ENVOY_JSON_OPTIONS) as JsonObject;
  return JSON.stringify(json[route.responseField.jsonName] ?? null);
}

/**
 * The success status: 200, or the service's x-http-code (in its headers or trailers) when it
 * names a 2xx-5xx status, as the Lua filter does behind Envoy.
 */
export function successStatus(
  header: Headers,
  trailer: Headers,
  requestId: string,
  rpc: string,
  logger: Logger,
): number {
  const code = header.get("x-http-code") ?? trailer.get("x-http-code");
  if (code === null) return 200;
  const n = Number(code);
  if (STATUS_RE.test(code) && n >= 200) return n;
  logger.warn({ requestId, rpc, xHttpCode: code }, "ignoring invalid x-http-code from service");
  return 200;
}

/** 204 and 304 never carry a body (RFC 9110 §6.4.1). */
export function isBodiless(status: number): boolean {
  return status === 204 || status === 304;
}

export function writeSuccess(
  res: ServerResponse,
  route: Route,
  result: RpcResult,
  requestId: string,
  logger: Logger,
  acceptEncoding?: string | string[],
): void {
  const headers: OutgoingHttpHeaders = {};
  copyResponseMetadata(result.header, headers);
  copyResponseMetadata(result.trailer, headers);
  const status = successStatus(result.header, result.trailer, requestId, route.method.name, logger);
  headers["x-request-id"] = requestId;
  if (isBodiless(status)) {
    res.writeHead(status, headers);
    res.end();
    return;
  }
  const text = serialize(route, route.method.output, result.message);
  headers["content-type"] = "application/json";
  headers["content-length"] = Buffer.byteLength(text);
  const body = compressLikeEnvoy(acceptEncoding, headers, text);
  res.writeHead(status, headers);
  res.end(body);
}

interface ErrorParts {
  readonly status: number;
  readonly detail: string;
  readonly metadata: Headers | undefined;
}

/** Status, client-safe detail and forwarded metadata of anything thrown while serving. */
export function describeError(err: unknown): ErrorParts {
  if (err instanceof EdgeHttpError) return { status: err.status, detail: err.detail, metadata: undefined };
  if (err instanceof ConnectError) {
    return { status: httpStatusFromCode(err.code), detail: err.rawMessage, metadata: err.metadata };
  }
  // A bug in the edge: the message may hold internals, so the client gets a generic detail.
  return { status: 500, detail: "Internal error in the REST edge", metadata: undefined };
}

/**
 * How an error answer's body is written: agentplane's error body, or on an OTLP/HTTP path a
 * google.rpc.Status in the encoding of the request's Content-Type (protobuf when it names neither).
 */
export type ErrorFormat = { kind: "problem" } | { kind: "otlp"; encoding: OtlpEncoding };

export const PROBLEM: ErrorFormat = { kind: "problem" };

/** The error format of a request to `path` (without its query) with `contentType`. */
export function errorFormatOf(path: string, contentType: string | undefined): ErrorFormat {
  if (!OTLP_HTTP_PATHS.has(path)) return PROBLEM;
  return { kind: "otlp", encoding: encodingOf(contentType ?? "") ?? "protobuf" };
}

export function writeError(res: ServerResponse, parts: ErrorParts, requestId: string, format = PROBLEM): void {
  const headers: OutgoingHttpHeaders = {};
  if (parts.metadata !== undefined) copyResponseMetadata(parts.metadata, headers);
  const body =
    format.kind === "otlp"
      ? encodeStatus(parts.detail, format.encoding)
      : errorBody(parts.status, parts.detail, requestId);
  headers["x-request-id"] = requestId;
  headers["content-type"] = format.kind === "otlp" ? CONTENT_TYPES[format.encoding] : "application/json";
  headers["content-length"] = Buffer.byteLength(body);
  if (parts.status === 413) {
    // The rest of the oversized body was not read; closing is the only way to discard it
    // without reading it.
    headers["connection"] = "close";
  }
  res.writeHead(parts.status, headers);
  res.end(body);
}
