// gRPC status code → HTTP status, exactly as Envoy's grpc_json_transcoder maps them
// (Envoy's `Grpc::Utility::grpcToHttpStatus`). Kept in its own module, free of any edge
// dependency. The production Lua error mapper (deploy/envoy/error-mapper.lua) holds a copy, since
// Envoy runs that script as it is; test/deploy/error-mapper.test.ts reads the copy and fails when
// it differs from this table, so the two edges cannot disagree.
import { STATUS_CODES } from "node:http";
import { Code } from "@connectrpc/connect";

/** HTTP status for a gRPC code. Index = numeric gRPC code (0 = OK). */
export const GRPC_TO_HTTP_STATUS: Readonly<Record<number, number>> = Object.freeze({
  0: 200, // OK
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
});

/**
 * HTTP status for a gRPC code. Codes outside 0..16 fall into Envoy's default branch (500).
 * (A response with a missing or unparsable grpc-status is 503 in Envoy; a Connect transport
 * reports that case as a ConnectError with a proper code, so it never reaches this function.)
 */
export function httpStatusFromCode(code: number): number {
  return GRPC_TO_HTTP_STATUS[code] ?? 500;
}

// 499 is nginx's convention that Envoy adopted; Node's table does not know it.
const EXTRA_REASONS: Readonly<Record<number, string>> = { 499: "Client Closed Request" };

/** Standard reason phrase of an HTTP status, used as the error body's `title`. */
export function reasonPhrase(status: number): string {
  return STATUS_CODES[status] ?? EXTRA_REASONS[status] ?? "Unknown Status";
}
