// OTLP/HTTP bodies (https://opentelemetry.io/docs/specs/otlp/#otlphttp): decoding a request's
// raw body into the OpenTelemetry project's own messages (gen/opentelemetry, from their .proto
// files), and encoding the answer in the request's encoding. Nothing here is a hand-written
// protobuf decoder: protobuf bodies go through @bufbuild/protobuf's fromBinary, JSON bodies
// through its fromJson after the two changes OTLP/JSON makes to proto3 JSON (trace and span IDs
// in hex, not base64; enums as integers, which fromJson takes as they are).
import { gunzipSync } from "node:zlib";
import {
  fromBinary,
  fromJson,
  toBinary,
  toJsonString,
  type DescMessage,
  type JsonValue,
  type MessageShape,
} from "@bufbuild/protobuf";
import { locateJsonError } from "../../platform/json-error.js";
import { encodingOf, type OtlpEncoding } from "../../platform/otlp-http.js";
import { firstTooDeep, MAX_JSON_NESTING, MESSAGE_RECURSION_LIMIT } from "../../platform/json-nesting.js";

/**
 * The largest body, after gzip is undone, and the largest OTLP/gRPC message, that one export may
 * carry: 4 MiB (413 or RESOURCE_EXHAUSTED beyond it), the OpenTelemetry Collector's own default
 * for gRPC. A bound on what one request can make the process hold: decoded, every data point is
 * an object of its own, and 4 MiB of the smallest ones is up to 2 * 10^6 of them (a few hundred
 * MB for the moment of the request). Exporters batch far below it (the JS SDK's logs batch is
 * 512 records; a Claude Code metrics export is a few kilobytes).
 */
export const MAX_OTLP_BODY_BYTES = 4 * 1024 * 1024;

/**
 * The largest OTLP/gRPC message in the protocols Connect's handler decodes before the receiver
 * sees it (Connect, gRPC-Web, gRPC with JSON: for tools, no exporter speaks them): 64 KiB, a few
 * MB decoded at most. Binary gRPC, which exporters speak, reaches the receiver undecoded and takes
 * MAX_OTLP_BODY_BYTES within the decode budget.
 */
export const MAX_DECODED_GRPC_BYTES = 64 * 1024;

/** A request the OTLP specification answers with an HTTP error status and a google.rpc.Status. */
export class OtlpHttpError extends Error {
  constructor(
    readonly status: 400 | 413 | 415,
    message: string,
  ) {
    super(message);
    this.name = "OtlpHttpError";
  }
}

/**
 * gzip's magic number. A protobuf body cannot start with 0x1f (field 3 of wire type 7, which does
 * not exist) and a JSON body starts with `{` or white space, so a body starting with it is a
 * `Content-Encoding: gzip` body: both edges pass the raw bytes on as they came (Envoy's
 * transcoder puts the body in google.api.HttpBody untouched), and the service undoes the gzip.
 */
function isGzip(data: Uint8Array): boolean {
  return data.length >= 2 && data[0] === 0x1f && data[1] === 0x8b;
}

/** The body with gzip undone, within MAX_OTLP_BODY_BYTES (413 beyond). */
export function inflate(data: Uint8Array): Uint8Array {
  if (!isGzip(data)) {
    if (data.length > MAX_OTLP_BODY_BYTES) throw tooLarge();
    return data;
  }
  try {
    return gunzipSync(data, { maxOutputLength: MAX_OTLP_BODY_BYTES });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw tooLarge();
    throw new OtlpHttpError(400, `the gzip body could not be decompressed: ${(e as Error).message}`);
  }
}

const tooLarge = () =>
  new OtlpHttpError(413, `the request body exceeds ${MAX_OTLP_BODY_BYTES} bytes (after decompression)`);

/**
 * Where OTLP/JSON carries IDs as hex: the traces' and logs' trace and span IDs and those of
 * exemplars. Each path is a list of keys; `[]` walks every item of an array.
 */
const HEX_ID_PATHS: Readonly<Record<string, readonly (readonly string[])[]>> = {
  "opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest": [
    ["resourceLogs", "[]", "scopeLogs", "[]", "logRecords", "[]"],
  ],
  "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest": [
    ...["gauge", "sum", "histogram", "exponentialHistogram", "summary"].map((kind) => [
      "resourceMetrics",
      "[]",
      "scopeMetrics",
      "[]",
      "metrics",
      "[]",
      kind,
      "dataPoints",
      "[]",
      "exemplars",
      "[]",
    ]),
  ],
  "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest": [
    ["resourceSpans", "[]", "scopeSpans", "[]", "spans", "[]"],
    ["resourceSpans", "[]", "scopeSpans", "[]", "spans", "[]", "links", "[]"],
  ],
};

const ID_KEYS = ["traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"];
const HEX = /^(?:[0-9a-fA-F]{2})*$/;

/** Rewrites the hex IDs under `path` of `node` to base64, in place (what fromJson reads). */
function hexIdsToBase64(node: unknown, path: readonly string[], at: string): void {
  if (node === null || typeof node !== "object") return;
  if (path.length === 0) {
    const obj = node as Record<string, unknown>;
    for (const key of ID_KEYS) {
      const value = obj[key];
      if (typeof value !== "string") continue;
      if (!HEX.test(value))
        throw new OtlpHttpError(400, `${at}.${key}: must be a hex string (OTLP/JSON), got "${value.slice(0, 40)}"`);
      obj[key] = Buffer.from(value, "hex").toString("base64");
    }
    return;
  }
  const [head, ...rest] = path;
  if (head === "[]") {
    if (!Array.isArray(node)) return; // fromJson names the wrong type
    for (const [i, item] of node.entries()) hexIdsToBase64(item, rest, `${at}[${i}]`);
    return;
  }
  const obj = node as Record<string, unknown>;
  // OTLP/JSON receivers must take the proto field names as well as the lowerCamelCase ones.
  const snake = head!.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  for (const key of snake === head ? [head!] : [head!, snake]) {
    if (key in obj) hexIdsToBase64(obj[key], rest, `${at}.${key}`);
  }
}

export interface DecodeOptions {
  /**
   * Told the body's size once gzip is undone, before anything is decoded; may throw to refuse it
   * (decode-budget.ts).
   */
  readonly admit?: (bytes: number) => void;
  /**
   * An OTLP/gRPC message rather than an OTLP/HTTP body: protobuf, its compression already undone
   * by the gRPC listener (no gzip to look for), and a failure named as Connect's gRPC handler
   * names one ("parse binary: …").
   */
  readonly grpc?: boolean;
}

/** Decodes one export request of `schema` from the raw body, per its Content-Type. */
export function decodeExport<Desc extends DescMessage>(
  schema: Desc,
  contentType: string,
  raw: Uint8Array,
  { admit, grpc = false }: DecodeOptions = {},
): { message: MessageShape<Desc>; encoding: OtlpEncoding } {
  const encoding = encodingOf(contentType);
  if (encoding === undefined) {
    throw new OtlpHttpError(
      415,
      contentType === ""
        ? "missing Content-Type: send application/x-protobuf or application/json"
        : `unsupported Content-Type "${contentType.slice(0, 100)}": send application/x-protobuf or application/json`,
    );
  }
  const data = grpc ? raw : inflate(raw);
  admit?.(data.length);
  if (encoding === "protobuf") {
    try {
      return { message: fromBinary(schema, data, { readUnknownFields: false }), encoding };
    } catch (e) {
      const why = (e as Error).message;
      throw new OtlpHttpError(
        400,
        grpc ? `parse binary: ${why}` : `the body is not a valid ${schema.name} in protobuf: ${why}`,
      );
    }
  }
  let json: unknown;
  try {
    json = data.length === 0 ? {} : (JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(data)) as unknown);
  } catch (e) {
    throw new OtlpHttpError(400, `the body is not valid JSON: ${(e as Error).message}`);
  }
  if (firstTooDeep(json, MAX_JSON_NESTING))
    throw new OtlpHttpError(400, `the body nests objects and arrays deeper than ${MAX_JSON_NESTING} levels`);
  for (const path of HEX_ID_PATHS[schema.typeName] ?? []) hexIdsToBase64(json, path, "$");
  try {
    const message = fromJson(schema, json as JsonValue, {
      // Receivers must ignore fields they do not know (OTLP/JSON, forward compatibility).
      ignoreUnknownFields: true,
      recursionLimit: MESSAGE_RECURSION_LIMIT,
    });
    return { message, encoding };
  } catch (e) {
    // Named by its JSON path when it can be (the edge's reader for JSON bodies does the same).
    const located = locateJsonError(schema, json);
    throw new OtlpHttpError(
      400,
      `the body is not a valid ${schema.name} in OTLP/JSON: ${located ?? (e as Error).message}`,
    );
  }
}

/** A response message in `encoding` (OTLP/JSON prints no hex IDs in responses). */
export function encodeMessage<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
  encoding: OtlpEncoding,
): Uint8Array {
  return encoding === "protobuf" ? toBinary(schema, message) : new TextEncoder().encode(toJsonString(schema, message));
}
