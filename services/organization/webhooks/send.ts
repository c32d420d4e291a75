// One delivery attempt: POST the body to the endpoint with its Standard Webhooks headers, within
// SEND_TIMEOUT_MS, following no redirect (a 3xx is a failed attempt: a redirect could lead to an
// address the target policy refuses). Connections resolve through guardedLookup, unless private
// targets are allowed. The answer's body is not kept: a few bytes of it are read and dropped.
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { guardedLookup } from "./target-policy.js";
import { webhookHeaders } from "./signing.js";

export const SEND_TIMEOUT_MS = 10_000;

export interface SendOutcome {
  /** The HTTP status, when an answer came. */
  status: number | null;
  /** Why the attempt failed; undefined on a 2xx. */
  error?: string;
}

export function sendWebhook(
  target: { url: string; secret: string; id: string; body: string },
  options: { allowPrivateTargets: boolean; timeoutMs?: number },
): Promise<SendOutcome> {
  const url = new URL(target.url);
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  const body = Buffer.from(target.body);
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: SendOutcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    const req = send(
      url,
      {
        method: "POST",
        headers: { ...webhookHeaders(target.secret, target.id, target.body), "content-length": body.length },
        timeout: options.timeoutMs ?? SEND_TIMEOUT_MS,
        ...(options.allowPrivateTargets ? {} : { lookup: guardedLookup }),
        // A connection per attempt: an endpoint's address is checked every time.
        agent: false,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        res.resume();
        res.on("error", () => {});
        req.destroy();
        if (status >= 200 && status < 300) settle({ status });
        else settle({ status, error: `the endpoint answered HTTP ${status}` });
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${options.timeoutMs ?? SEND_TIMEOUT_MS} ms`)));
    req.on("error", (err) => settle({ status: null, error: err.message.slice(0, 300) }));
    req.end(body);
  });
}
