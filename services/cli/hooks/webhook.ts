// The webhook target: one JSON POST per event. The body is a Slack-compatible incoming-webhook
// message ({"text": …}, which Slack, Mattermost and similar services display as is) with the
// event's details under "agentplane" for receivers that want them; see signature.ts for the
// optional signature headers.
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { WebhookConfig } from "./config.js";
import type { Notice, Target } from "./deliver.js";
import { SIGNATURE_HEADER, TIMESTAMP_HEADER, signBody } from "./signature.js";

export const USER_AGENT = "agentplane-hook/1";

export interface WebhookPayload {
  text: string;
  agentplane: {
    event: string;
    session_id?: string;
    cwd?: string;
    message?: string;
    reason?: string;
    tool_name?: string;
    /** RFC 3339. */
    time: string;
  };
}

export function webhookPayload(notice: Notice): WebhookPayload {
  const { input } = notice;
  const details: WebhookPayload["agentplane"] = { event: input.event, time: notice.at.toISOString() };
  if (input.sessionId) details.session_id = input.sessionId;
  if (input.cwd) details.cwd = input.cwd;
  if (input.message) details.message = input.message;
  if (input.reason) details.reason = input.reason;
  if (input.toolName) details.tool_name = input.toolName;
  return { text: notice.text, agentplane: details };
}

export function webhookHeaders(config: WebhookConfig, body: string, nowMs: number): Record<string, string> {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
    "user-agent": USER_AGENT,
  };
  if (config.secret) {
    const timestamp = String(Math.floor(nowMs / 1000));
    headers[TIMESTAMP_HEADER.toLowerCase()] = timestamp;
    headers[SIGNATURE_HEADER.toLowerCase()] = signBody(config.secret, timestamp, body);
  }
  return headers;
}

/** POSTs the body; resolves on a 2xx answer, rejects otherwise or when the signal fires. */
export function postJson(
  url: string,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    // agent: false: no keep-alive socket to hold the process open after the answer.
    const req = send(target, { method: "POST", headers, signal, agent: false }, (res) => {
      const status = res.statusCode ?? 0;
      res.resume();
      res.on("error", reject);
      res.on("end", () =>
        status >= 200 && status < 300 ? resolve() : reject(new Error(`webhook answered HTTP ${status}`)),
      );
    });
    req.on("error", reject);
    req.end(body);
  });
}

export function webhookTarget(config: WebhookConfig): Target {
  return {
    name: "webhook",
    async send(notice, signal) {
      const body = JSON.stringify(webhookPayload(notice));
      await postJson(config.url, webhookHeaders(config, body, Date.now()), body, signal);
    },
  };
}
