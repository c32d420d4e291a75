// Standard Webhooks signatures (https://www.standardwebhooks.com): the secret is "whsec_" and
// base64 of 24 random bytes; a delivery is signed with HMAC-SHA256 over
// "<webhook-id>.<webhook-timestamp>.<body>" using the secret's bytes, and sent as
// "webhook-signature: v1,<base64 signature>".
import { createHmac, randomBytes } from "node:crypto";

const PREFIX = "whsec_";

export function newWebhookSecret(): string {
  return PREFIX + randomBytes(24).toString("base64");
}

export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");
  const mac = createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
  return `v1,${mac}`;
}

/** The headers of one attempt (a retry signs again, with its own timestamp, the same id). */
export function webhookHeaders(secret: string, id: string, body: string, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    "content-type": "application/json",
    "user-agent": "agentplane-webhooks/1",
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signWebhook(secret, id, timestamp, body),
  };
}
