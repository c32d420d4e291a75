// What the google.api.HttpBody routes carry. Their bytes are whatever the service writes, so the
// protos do not type them; these conventions of the protos and one table do:
//  - A server stream of HttpBody beside a method of the same service taking the same request is
//    the REST form of that method (analytics.proto: StreamTokens serves GetTokens's answer;
//    sessions.proto: StreamSessionEvents serves WatchSessionEvents's events). Beside a unary
//    method the body is that method's answer as JSON, and when the request has a `format` field
//    also CSV or NDJSON exports of its rows; beside a server stream it is Server-Sent Events, each
//    event's data one of that stream's messages as JSON.
//  - A `repeated google.protobuf.Struct` in such an answer holds rows printed from typed messages
//    of the same package, named after the method: <X>Row and <X>GroupRow for Stream<X>
//    (analytics.proto's file comment). The document gives the envelope with those rows as
//    <X>Response.
//  - OTLP_EXPORTS: each OTLP/HTTP route carries the messages of the OTLP/gRPC method it is the
//    HTTP transport of, in the request's encoding (protobuf or OTLP/JSON).
import type { DescField, DescMethod, DescService, FileRegistry } from "@bufbuild/protobuf";
import type { JsonSchema } from "./json-schema.js";
import type { RestRoute } from "./routes.js";
import type { SchemaBuilder } from "./schemas.js";

export const HTTP_BODY = "google.api.HttpBody";

export type Content = Record<string, { schema: JsonSchema }>;

export interface HttpBodyForm {
  /** The method whose answer the route serves (GetTokens for StreamTokens): the operation's summary. */
  readonly serves?: string;
  /** The request body, when the request is an HttpBody. */
  readonly request?: Content;
  readonly success: Content;
  /** Error statuses answered for reasons of the route's own: when each is answered, and its body. */
  readonly errors?: Readonly<Record<number, { description: string; content: Content }>>;
  /** The body of every other error answer, when it is not the edges' error body. */
  readonly errorContent?: Content;
}

const OTLP_EXPORTS: Readonly<Record<string, string>> = {
  "agentplane.analytics.v1.OtlpHttpService.ExportLogs": "opentelemetry.proto.collector.logs.v1.LogsService.Export",
  "agentplane.analytics.v1.OtlpHttpService.ExportMetrics":
    "opentelemetry.proto.collector.metrics.v1.MetricsService.Export",
  "agentplane.analytics.v1.OtlpHttpService.ExportTraces": "opentelemetry.proto.collector.trace.v1.TraceService.Export",
};

/** The OTLP/HTTP statuses answered with a google.rpc.Status in the request's encoding, and when. */
const OTLP_ERRORS: Readonly<Record<number, string>> = {
  400: "Bad Request: the body does not decode as the OTLP message of its Content-Type.",
  413: "Content Too Large: the body, or the body once gunzipped, is too large.",
  415: "Unsupported Media Type: the Content-Type is neither application/x-protobuf nor application/json.",
};

const PROTOBUF_BYTES = { type: "string", contentMediaType: "application/x-protobuf" };

/** The form of an HttpBody route; undefined for a route whose request and answer are messages. */
export function httpBodyForm(
  route: RestRoute,
  schemas: SchemaBuilder,
  registry: FileRegistry,
): HttpBodyForm | undefined {
  const { method, service } = route;
  const where = `${service.typeName}.${method.name}`;
  const otlp = OTLP_EXPORTS[where];
  if (otlp !== undefined) return otlpForm(otlp, schemas, registry, where);
  if (method.input.typeName === HTTP_BODY)
    throw new Error(`${where}: an HttpBody request the document cannot describe`);
  if (method.output.typeName !== HTTP_BODY) return undefined;
  const sibling = service.methods.find(
    (m) => m !== method && m.input === method.input && m.output.typeName !== HTTP_BODY,
  );
  if (sibling === undefined)
    throw new Error(`${where}: an HttpBody answer with no method of the same request beside it`);
  if (sibling.methodKind === "server_streaming") {
    return {
      success: {
        "text/event-stream": {
          schema: {
            type: "string",
            description: `Server-Sent Events: each event is an \`id:\` line and a \`data:\` line holding one ${sibling.output.name} as JSON (see x-event-data).`,
            "x-event-data": schemas.ref(sibling.output, "response"),
          },
        },
      },
    };
  }
  const success: Content = { "application/json": { schema: jsonAnswer(method, sibling, service, schemas, registry) } };
  if (method.input.fields.some((f) => f.name === "format")) {
    success["text/csv"] = { schema: { type: "string", description: "With format=csv: the rows as RFC 4180 CSV." } };
    success["application/x-ndjson"] = {
      schema: { type: "string", description: "With format=ndjson: one JSON row per line." },
    };
  }
  return { serves: sibling.name, success };
}

/** The sibling's answer; its Struct rows typed by the <X>Row and <X>GroupRow messages. */
function jsonAnswer(
  method: DescMethod,
  sibling: DescMethod,
  service: DescService,
  schemas: SchemaBuilder,
  registry: FileRegistry,
): JsonSchema {
  const rowsField = sibling.output.fields.find(isStructList);
  if (rowsField === undefined) return schemas.ref(sibling.output, "response");
  const x = method.name.replace(/^Stream/, "");
  const pkg = service.file.proto.package;
  const rows = [`${x}Row`, `${x}GroupRow`]
    .map((name) => registry.getMessage(`${pkg}.${name}`))
    .filter((m) => m !== undefined);
  if (rows.length === 0) throw new Error(`${service.typeName}.${method.name}: no ${x}Row message types its rows`);
  const envelope = schemas.object(sibling.output, "response");
  const properties = envelope["properties"] as Record<string, JsonSchema>;
  const items = rows.map((row) => schemas.ref(row, "response"));
  properties[rowsField.jsonName] = {
    type: "array",
    items: items.length === 1 ? items[0] : { oneOf: items },
    description: `One ${rows[0]!.name} per day${rows[1] === undefined ? "" : `, or with group_by one ${rows[1].name} per group and day`}.`,
  };
  return schemas.named(`${x}Response`, envelope);
}

function isStructList(field: DescField): boolean {
  return (
    field.fieldKind === "list" && field.listKind === "message" && field.message.typeName === "google.protobuf.Struct"
  );
}

function otlpForm(grpcMethod: string, schemas: SchemaBuilder, registry: FileRegistry, where: string): HttpBodyForm {
  const dot = grpcMethod.lastIndexOf(".");
  const method = registry
    .getService(grpcMethod.slice(0, dot))
    ?.methods.find((m) => m.name === grpcMethod.slice(dot + 1));
  const status = registry.getMessage("google.rpc.Status");
  if (method === undefined || status === undefined) throw new Error(`${where}: ${grpcMethod} is not among the protos`);
  const errorContent: Content = {
    "application/x-protobuf": { schema: { ...PROTOBUF_BYTES, description: "A google.rpc.Status." } },
    "application/json": { schema: schemas.ref(status, "sparse-response") },
  };
  return {
    request: {
      "application/x-protobuf": {
        schema: { ...PROTOBUF_BYTES, description: `An ${method.input.name}; gzip with Content-Encoding: gzip.` },
      },
      "application/json": {
        schema: {
          type: "object",
          description: `An ${method.input.name} in OTLP/JSON (trace and span IDs in hex); gzip with Content-Encoding: gzip.`,
        },
      },
    },
    success: {
      "application/x-protobuf": { schema: { ...PROTOBUF_BYTES, description: `An ${method.output.name}.` } },
      "application/json": { schema: schemas.ref(method.output, "sparse-response") },
    },
    errors: Object.fromEntries(
      Object.entries(OTLP_ERRORS).map(([status, description]) => [status, { description, content: errorContent }]),
    ),
    // OTLP/HTTP has every 4xx and 5xx answer carry a google.rpc.Status, and both edges answer so
    // on these paths whatever refused the call (services/platform/otlp-http.ts).
    errorContent,
  };
}
