// Writing the HTTP response: success (status from x-http-code, JSON with every implicit field
// printed, service headers forwarded) and errors (one body shape for all of them).
import type { OutgoingHttpHeaders, ServerResponse } from "node:http";
import { toJson, toJsonString, type DescMessage, type JsonObject, type Message } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import {
  bodyLength,
  encodedStream,
  isDeflated,
  plainPart,
  type BodyPart,
  type ContentCoding,
} from "../platform/deflate-parts.js";
import type { RenderedResponseSlot } from "../platform/rendered-response.js";
import { EdgeHttpError, errorBody } from "./errors.js";
import { copyResponseMetadata } from "./headers.js";
import type { Route } from "./routes.js";
import { httpStatusFromCode } from "./status.js";

// Envoy: always_print_primitive_fields=true, preserve_proto_field_names=false.
const JSON_OPTIONS = { alwaysEmitImplicit: true } as const;

const STATUS_RE = /^[1-5]\d\d$/;

export interface RpcResult {
  readonly header: Headers;
  readonly trailer: Headers;
  readonly message: Message;
}

function serialize(route: Route, output: DescMessage, message: Message): string {
  if (route.responseField === undefined) return toJsonString(output, message, JSON_OPTIONS);
  // response_body: the named field alone. An unset message field has no JSON value; like
  // protobuf's JSON writer for an absent root we print null.
  const json = toJson(output, message, JSON_OPTIONS) as JsonObject;
  return JSON.stringify(json[route.responseField.jsonName] ?? null);
}

/**
 * The body when the handler rendered the first field itself (platform/rendered-response.ts): the
 * field's parts spliced in front of the rest of the message, printed as usual.
 */
function renderedBody(route: Route, output: DescMessage, message: Message, slot: RenderedResponseSlot): BodyPart[] {
  const rendered = slot.rendered!;
  const first = output.fields[0];
  const json = toJson(output, message, JSON_OPTIONS) as JsonObject;
  const left = json[rendered.jsonName];
  // A handler bug, not a client error: the response would silently lose or duplicate data.
  if (
    route.responseField !== undefined ||
    first?.jsonName !== rendered.jsonName ||
    !Array.isArray(left) ||
    left.length !== 0
  ) {
    throw new Error(`${route.method.name}: a rendered field must be the response's first field, left empty`);
  }
  delete json[rendered.jsonName];
  const rest = JSON.stringify(json);
  return [`{${JSON.stringify(rendered.jsonName)}:`, ...rendered.parts, rest === "{}" ? "}" : `,${rest.slice(1)}`];
}

/** Writes a pre-rendered body, compressed or as text. */
function writeParts(
  res: ServerResponse,
  status: number,
  headers: OutgoingHttpHeaders,
  parts: readonly BodyPart[],
  coding: ContentCoding | null,
): void {
  headers["content-type"] = "application/json";
  headers["vary"] = "Accept-Encoding";
  let chunks: ReadonlyArray<string | Buffer>;
  if (coding !== null) {
    chunks = encodedStream(parts, coding);
    headers["content-encoding"] = coding;
    headers["content-length"] = chunks.reduce((n, c) => n + c.length, 0);
    // Another coding is another representation: a strong validator would promise the same bytes.
    const etag = headers["etag"];
    if (typeof etag === "string" && !etag.startsWith("W/")) headers["etag"] = `W/${etag}`;
  } else {
    chunks = parts.map(plainPart);
    headers["content-length"] = bodyLength(parts);
  }
  res.writeHead(status, headers);
  res.cork(); // end() uncorks: the parts leave in as few socket writes as possible
  for (const c of chunks) res.write(c);
  res.end();
}

export function writeSuccess(
  res: ServerResponse,
  route: Route,
  result: RpcResult,
  requestId: string,
  logger: Logger,
  slot?: RenderedResponseSlot,
): void {
  const headers: OutgoingHttpHeaders = {};
  copyResponseMetadata(result.header, headers);
  copyResponseMetadata(result.trailer, headers);
  let status = 200;
  const code = result.header.get("x-http-code") ?? result.trailer.get("x-http-code");
  if (code !== null) {
    const n = Number(code);
    if (STATUS_RE.test(code) && n >= 200) status = n;
    else
      logger.warn({ requestId, rpc: route.method.name, xHttpCode: code }, "ignoring invalid x-http-code from service");
  }
  headers["x-request-id"] = requestId;
  if (status === 204 || status === 304) {
    // These statuses never carry a body (RFC 9110 §6.4.1).
    res.writeHead(status, headers);
    res.end();
    return;
  }
  if (slot?.rendered !== undefined) {
    const parts = renderedBody(route, route.method.output, result.message, slot);
    // Only bodies holding parts compressed ahead of time are sent compressed: compressing text
    // per request would cost more CPU than the transfer saves on the networks we serve.
    writeParts(res, status, headers, parts, parts.some(isDeflated) ? slot.coding : null);
    return;
  }
  const body = serialize(route, route.method.output, result.message);
  headers["content-type"] = "application/json";
  headers["content-length"] = Buffer.byteLength(body);
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

export function writeError(res: ServerResponse, parts: ErrorParts, requestId: string): void {
  const headers: OutgoingHttpHeaders = {};
  if (parts.metadata !== undefined) copyResponseMetadata(parts.metadata, headers);
  const body = errorBody(parts.status, parts.detail, requestId);
  headers["x-request-id"] = requestId;
  headers["content-type"] = "application/json";
  headers["content-length"] = Buffer.byteLength(body);
  if (parts.status === 413) {
    // The rest of the oversized body was not read; closing is the only way to discard it
    // without reading it.
    headers["connection"] = "close";
  }
  res.writeHead(parts.status, headers);
  res.end(body);
}
