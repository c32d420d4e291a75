// What OTLP/HTTP (https://opentelemetry.io/docs/specs/otlp/#otlphttp) fixes for every answer on
// its paths, whichever layer gives it: the request's encoding (application/x-protobuf or
// application/json) is the answer's, and every 4xx and 5xx answer carries a google.rpc.Status,
// which exporters log. The OTLP receiver (services/analytics/otlp) answers undecodable bodies so;
// the REST edge answers so what the layers before it refuse on these paths (credentials, limits,
// a busy receiver), as deploy/envoy/error-mapper.lua does behind Envoy.
import { toBinary, toJsonString } from "@bufbuild/protobuf";
import { type Status, StatusSchema } from "../../gen/google/rpc/status_pb.js";

/** The OTLP/HTTP paths: agentplane.analytics.v1.OtlpHttpService's routes. */
export const OTLP_HTTP_PATHS: ReadonlySet<string> = new Set(["/v1/logs", "/v1/metrics", "/v1/traces"]);

export type OtlpEncoding = "protobuf" | "json";

/** The encoding of a Content-Type (parameters ignored), or undefined for any other type. */
export function encodingOf(contentType: string): OtlpEncoding | undefined {
  const semi = contentType.indexOf(";");
  const essence = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  if (essence === "application/x-protobuf") return "protobuf";
  if (essence === "application/json") return "json";
  return undefined;
}

export const CONTENT_TYPES: Readonly<Record<OtlpEncoding, string>> = {
  protobuf: "application/x-protobuf",
  json: "application/json",
};

/**
 * The body of an OTLP/HTTP error answer: a google.rpc.Status with the message, its code left 0
 * (OTLP does not use it), in `encoding`.
 */
export function encodeStatus(message: string, encoding: OtlpEncoding): Uint8Array {
  const status: Status = { $typeName: "google.rpc.Status", code: 0, message, details: [] };
  return encoding === "protobuf"
    ? toBinary(StatusSchema, status)
    : new TextEncoder().encode(toJsonString(StatusSchema, status));
}
