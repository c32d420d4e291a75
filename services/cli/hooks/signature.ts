// Webhook request signing. With a secret configured, every webhook request carries
//   X-Agentplane-Timestamp: <Unix seconds when it was sent>
//   X-Agentplane-Signature: sha256=<lower-case hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>
// A receiver recomputes the HMAC over the timestamp header, a dot and the exact body bytes,
// compares in constant time, and rejects timestamps too far from its clock (replays).
import { createHmac, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADER = "X-Agentplane-Signature";
export const TIMESTAMP_HEADER = "X-Agentplane-Timestamp";

export function signBody(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

/** Checks a signature as a receiver would; `toleranceSeconds` bounds the timestamp's age. */
export function verifySignature(
  secret: string,
  headers: { timestamp: string | undefined; signature: string | undefined },
  body: string,
  nowSeconds = Math.floor(Date.now() / 1000),
  toleranceSeconds = 300,
): boolean {
  const { timestamp, signature } = headers;
  if (!timestamp || !signature || !/^\d+$/.test(timestamp)) return false;
  if (Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds) return false;
  const expected = Buffer.from(signBody(secret, timestamp, body));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
