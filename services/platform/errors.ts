// Domain errors and the one mapping from them (and from database failures) to gRPC codes.
// Domain code throws these; the error interceptor turns them into ConnectErrors at the edge of
// the domain, so no handler carries its own table.
import { Code, ConnectError } from "@connectrpc/connect";

export type DomainErrorKind =
  | "invalid_argument"
  | "unauthenticated"
  | "permission_denied"
  | "not_found"
  | "already_exists"
  | "conflict"
  | "failed_precondition"
  | "resource_exhausted"
  | "unavailable"
  | "deadline_exceeded";

const KIND_TO_CODE: Record<DomainErrorKind, Code> = {
  invalid_argument: Code.InvalidArgument,
  unauthenticated: Code.Unauthenticated,
  permission_denied: Code.PermissionDenied,
  not_found: Code.NotFound,
  already_exists: Code.AlreadyExists,
  conflict: Code.Aborted,
  failed_precondition: Code.FailedPrecondition,
  resource_exhausted: Code.ResourceExhausted,
  unavailable: Code.Unavailable,
  deadline_exceeded: Code.DeadlineExceeded,
};

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
    /** Headers the client should see with the error (e.g. retry-after). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "DomainError";
  }
}

/** Bad input. The message names the offending field first: "limit: must be an integer from 1 to 100, got 0". */
export const invalidArgument = (field: string, problem: string) =>
  new DomainError("invalid_argument", `${field}: ${problem}`);
export const notFound = (what: string) => new DomainError("not_found", `${what} not found`);
export const permissionDenied = (why: string) => new DomainError("permission_denied", why);
export const unauthenticated = (why: string) => new DomainError("unauthenticated", why);
export const alreadyExists = (what: string) => new DomainError("already_exists", what);
export const conflict = (what: string) => new DomainError("conflict", what);
export const unavailable = (what: string) => new DomainError("unavailable", what);

// Postgres SQLSTATEs that say something about the request rather than a bug.
const PG_STATE_TO_CODE: Record<string, [Code, string]> = {
  "23505": [Code.AlreadyExists, "the resource already exists"],
  "40001": [Code.Aborted, "concurrent update, retry the request"],
  "40P01": [Code.Aborted, "concurrent update, retry the request"],
  "57014": [Code.DeadlineExceeded, "the database took too long to answer"],
  "53300": [Code.Unavailable, "the database is busy, retry shortly"],
  "57P01": [Code.Unavailable, "the database is restarting, retry shortly"],
  "57P03": [Code.Unavailable, "the database is starting, retry shortly"],
  // Data exceptions: a request value no validator caught (a NUL character, which Postgres text
  // cannot hold; a number or string past a column's range). The client's input, not a bug.
  "22021": [Code.InvalidArgument, "request: text must not contain the NUL character (U+0000)"],
  "22P05": [Code.InvalidArgument, "request: text contains a character that cannot be stored"],
  "22001": [Code.InvalidArgument, "request: a value is too long"],
  "22003": [Code.InvalidArgument, "request: a number is out of range"],
  "22P02": [Code.InvalidArgument, "request: a value has the wrong format"],
  "54000": [Code.InvalidArgument, "request: a value is too large"],
};

/** Which unique constraint a Postgres unique violation (SQLSTATE 23505) names; undefined for any other error. */
export function violatedConstraint(err: unknown): string | undefined {
  const e = err as { code?: unknown; constraint?: unknown } | null;
  return e?.code === "23505" && typeof e.constraint === "string" ? e.constraint : undefined;
}

const NETWORK_ERRORS = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH"]);

/**
 * Longest error message sent, in UTF-16 code units. Over gRPC the message travels in the
 * trailers (grpc-message, percent-encoded: up to 9 bytes per unit), and a header block past the
 * peer's limit (Node's 64 KiB, Envoy's 60 KiB) does not fail one call: it ends the whole HTTP/2
 * connection (FRAME_SIZE_ERROR), and every other call on it. 1 024 units stay under 10 KiB.
 */
export const MAX_ERROR_MESSAGE_LENGTH = 1024;
const TRUNCATED = "… (message truncated)";

/** The message cut to MAX_ERROR_MESSAGE_LENGTH, never in the middle of a surrogate pair. */
export function boundedMessage(message: string): string {
  if (message.length <= MAX_ERROR_MESSAGE_LENGTH) return message;
  let end = MAX_ERROR_MESSAGE_LENGTH - TRUNCATED.length;
  if (/[\ud800-\udbff]/.test(message[end - 1]!)) end--;
  return message.slice(0, end) + TRUNCATED;
}

/**
 * Maps anything a handler threw to a ConnectError. Returns `internal: true` for errors that are
 * bugs, so the caller logs them; their message is never shown to the client.
 */
export function toConnectError(err: unknown): { error: ConnectError; internal: boolean } {
  if (err instanceof ConnectError) {
    const internal = err.code === Code.Internal || err.code === Code.Unknown;
    if (err.rawMessage.length <= MAX_ERROR_MESSAGE_LENGTH) return { error: err, internal };
    const error = new ConnectError(boundedMessage(err.rawMessage), err.code, err.metadata, undefined, err.cause);
    error.details.push(...err.details);
    return { error, internal };
  }
  if (err instanceof DomainError) {
    const error = new ConnectError(boundedMessage(err.message), KIND_TO_CODE[err.kind]);
    for (const [k, v] of Object.entries(err.headers ?? {})) error.metadata.set(k, v);
    return { error, internal: false };
  }
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === "string" ? e.code : undefined;
  if (code !== undefined && PG_STATE_TO_CODE[code]) {
    const [grpcCode, message] = PG_STATE_TO_CODE[code];
    return { error: new ConnectError(message, grpcCode), internal: false };
  }
  const message = typeof e?.message === "string" ? e.message : "";
  if (
    (code !== undefined && NETWORK_ERRORS.has(code)) ||
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
      message,
    )
  ) {
    return {
      error: new ConnectError("a backing service is unavailable, retry shortly", Code.Unavailable),
      internal: false,
    };
  }
  return { error: new ConnectError("internal error", Code.Internal), internal: true };
}
