// The OpenAPI 3.1 document of the public REST routes: paths from the google.api.http rules,
// schemas from the messages (schemas.ts, field-rules.ts), statuses (statuses.ts) and the
// HttpBody routes' forms (http-body.ts). Every error answer but OTLP's carries the edges' error
// body ({title, detail, status, requestId}: the Lua filter of envoy.yaml and services/edge); on
// the OTLP/HTTP paths every error answer is a google.rpc.Status.
import type { DescField, FileRegistry } from "@bufbuild/protobuf";
import { reasonPhrase } from "../../services/edge/status.js";
import { describe } from "./comments.js";
import { FIELD_RULES } from "./field-rules.js";
import { BUSY_RETRY_AFTER, headerParameters, RETRY_AFTER, successHeaders } from "./headers.js";
import { httpBodyForm } from "./http-body.js";
import type { JsonSchema } from "./json-schema.js";
import { queryFields, type RestRoute, restRoutes } from "./routes.js";
import { resolveRefs, SchemaBuilder } from "./schemas.js";
import { errorStatuses, notModified, successStatus } from "./statuses.js";

const ERROR_BODY: JsonSchema = {
  type: "object",
  description: "The body of every error answer, from either edge.",
  properties: {
    title: { type: "string", description: "The status's reason phrase." },
    detail: { type: "string", description: "What went wrong; for bad input it names the field first." },
    status: { type: "integer", description: "The HTTP status." },
    requestId: { type: "string", description: "The request's ID, as in the X-Request-Id response header." },
  },
  required: ["title", "detail", "status", "requestId"],
  additionalProperties: false,
};

/** When each error status is answered. */
const ERROR_MEANINGS: Readonly<Record<number, string>> = {
  400: "invalid input: the detail names the field or query parameter",
  401: "the Authorization header is missing, or its credential is invalid or of a kind this route does not take",
  403: "the caller's role (or service account scope) does not allow this call",
  404: "no such resource in the caller's organization, or one the caller may not see",
  409: "the request conflicts with the resource's state (a name or host in use, a state that forbids it, an Idempotency-Key used with another body)",
  413: "the request body is too large",
  415: "the request's Content-Type or Content-Encoding is not accepted",
  429: "the credential's rate limit is used up; Retry-After says when to retry",
  500: "an internal error",
  503: "a dependency is unavailable; retry shortly",
};

export function buildDocument(registry: FileRegistry, serviceNames: readonly string[]): Record<string, unknown> {
  const schemas = new SchemaBuilder(FIELD_RULES);
  const errorBody = schemas.named("Error", ERROR_BODY);
  const paths: Record<string, Record<string, unknown>> = {};
  const errorsUsed = new Set<number>();
  const tags: { name: string; description?: string }[] = [];
  for (const route of restRoutes(registry, serviceNames)) {
    if (!tags.some((t) => t.name === route.service.name)) {
      tags.push({ name: route.service.name, description: describe(route.service) });
    }
    const item = (paths[route.path] ??= {});
    if (item[route.httpMethod] !== undefined) throw new Error(`${route.httpMethod} ${route.path} is bound twice`);
    item[route.httpMethod] = operation(route, schemas, registry, errorsUsed);
  }
  const responses = Object.fromEntries(
    [...errorsUsed]
      .sort((a, b) => a - b)
      .map((status) => [
        responseName(status),
        {
          description: `${reasonPhrase(status)}: ${ERROR_MEANINGS[status] ?? "see the detail"}.`,
          ...(status === 429 ? { headers: RETRY_AFTER } : {}),
          content: { "application/json": { schema: errorBody } },
        },
      ]),
  );
  const { schemas: components, names } = schemas.components();
  const document = {
    openapi: "3.1.0",
    info: {
      title: "agentplane API",
      version: "1",
      description:
        "The public REST interface of agentplane: organization usage analytics (/api/v1/analytics), readiness reports, " +
        "sessions, computers and organization (/api/v0), and OTLP/HTTP ingest (/v1/logs, /v1/metrics, /v1/traces). " +
        "Generated from the protos by scripts/protoc-gen-openapi (`npm run generate`).",
    },
    servers: [{ url: "/" }],
    security: [{ bearerAuth: [] }],
    tags,
    paths,
    components: {
      securitySchemes: {
        bearerAuth: {
          type: "http",
          scheme: "bearer",
          description:
            "An API key (every route), or a JWT access token (the /api/v0 routes), or for OTLP ingest a service account token with the analytics.ingest scope.",
        },
      },
      schemas: components,
      responses,
    },
  };
  resolveRefs(document, names);
  return document;
}

function operation(
  route: RestRoute,
  schemas: SchemaBuilder,
  registry: FileRegistry,
  errorsUsed: Set<number>,
): Record<string, unknown> {
  const { method, service } = route;
  const form = httpBodyForm(route, schemas, registry);
  const op: Record<string, unknown> = {
    operationId: `${service.name}_${method.name}`,
    tags: [service.name],
    summary: (form?.serves ?? method.name).replace(/(?<=[a-z])(?=[A-Z])/g, " "),
  };
  const description = describe(method);
  if (description !== undefined) op["description"] = description;
  const parameters = [
    ...route.pathFields.map((f) => parameter(f, "path", schemas)),
    ...queryFields(route).map((f) => parameter(f, "query", schemas)),
    ...headerParameters(route),
  ];
  if (parameters.length > 0) op["parameters"] = parameters;
  if (form?.request !== undefined) op["requestBody"] = { required: true, content: form.request };
  else if (route.body === "*") {
    const schema = schemas.object(method.input, "request", new Set(route.pathFields));
    op["requestBody"] = { required: true, content: { "application/json": { schema } } };
  } else if (route.body !== undefined) {
    op["requestBody"] = {
      required: true,
      content: { "application/json": { schema: schemas.field(route.body, "request") } },
    };
  }
  const responses: Record<string, unknown> = {};
  const success = successStatus(method);
  responses[String(success)] =
    success === 204
      ? { description: reasonPhrase(204), headers: successHeaders(route) }
      : {
          description: reasonPhrase(success),
          headers: successHeaders(route),
          content: form?.success ?? { "application/json": { schema: schemas.ref(method.output, "response") } },
        };
  if (notModified(route)) {
    responses["304"] = { description: "Not Modified: If-None-Match names the answer's current ETag." };
  }
  for (const status of errorStatuses(route)) {
    const own = form?.errors?.[status];
    if (own !== undefined) {
      responses[String(status)] = own;
    } else if (form?.errorContent !== undefined) {
      responses[String(status)] = {
        description: `${reasonPhrase(status)}: ${ERROR_MEANINGS[status] ?? "see the message"}.`,
        ...(status === 429 ? { headers: RETRY_AFTER } : status === 503 ? { headers: BUSY_RETRY_AFTER } : {}),
        content: form.errorContent,
      };
    } else {
      responses[String(status)] = { $ref: `#/components/responses/${responseName(status)}` };
      errorsUsed.add(status);
    }
  }
  op["responses"] = responses;
  return op;
}

function parameter(field: DescField, where: "path" | "query", schemas: SchemaBuilder): Record<string, unknown> {
  if (
    field.fieldKind === "message" ||
    field.fieldKind === "map" ||
    (field.fieldKind === "list" && field.listKind === "message")
  ) {
    throw new Error(`${field.parent.typeName}.${field.name}: a ${where} parameter must be a scalar or a list of them`);
  }
  const { description, ...schema } = schemas.field(field, "request");
  const rule = schemas.rule(field);
  const param: Record<string, unknown> = {
    name: where === "query" ? (rule?.queryName ?? field.jsonName) : field.jsonName,
    in: where,
    required: where === "path" || rule?.required === true,
    schema,
  };
  if (description !== undefined) param["description"] = description;
  return param;
}

function responseName(status: number): string {
  return reasonPhrase(status).replace(/[^A-Za-z]/g, "");
}
