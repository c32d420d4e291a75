// The request id every answer carries (X-Request-Id): the client's own when it is 1-200 visible
// ASCII characters (no space, no control characters), else a fresh UUID. One rule for the REST
// edge, the RPC interceptor and the refusals written before a call's body is read.
import { randomUUID } from "node:crypto";

const REQUEST_ID = /^[\x21-\x7e]{1,200}$/;

export function requestIdFrom(given: string | readonly string[] | null | undefined): string {
  return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
}
