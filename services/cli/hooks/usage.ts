// Usage reporting: one `hook` telemetry event (docs/telemetry.md) per notify execution, best
// effort.
//
// The ingest RPC, agentplane.analytics.v1.TelemetryService/Ingest, is internal gRPC: a developer's
// machine cannot reach it inside the cluster. So the hook speaks the Connect protocol (unary
// JSON, which the services' port serves next to gRPC) to a configured base URL: the services'
// gRPC port where it is reachable (development, a VPN), or an authenticating gateway that
// forwards the call inside the cluster. The API key is sent as `Authorization: Bearer`, for that
// gateway; the internal service itself trusts its caller and takes org_id and user_id from the
// event, which is why they are part of the configuration. HTTP/2 is used (cleartext prior
// knowledge for http:, ALPN over TLS for https:) because the services' port speaks only HTTP/2.
import { randomUUID } from "node:crypto";
import { connect, constants } from "node:http2";
import type { UsageConfig } from "./config.js";
import type { Notice, Target } from "./deliver.js";
import { USER_AGENT } from "./webhook.js";

export const INGEST_PATH = "/agentplane.analytics.v1.TelemetryService/Ingest";
/** The `command` recorded for the hook (the analytics group executions by event, matcher, command). */
export const HOOK_COMMAND = "agentplane hook notify";

/** TelemetryEvent in protobuf JSON (lowerCamel names, which every protobuf JSON parser reads). */
export function hookTelemetryEvent(
  config: UsageConfig,
  notice: Notice,
  eventId: string = randomUUID(),
): Record<string, string> {
  const event: Record<string, string> = {
    type: "hook",
    time: notice.at.toISOString(),
    orgId: config.orgId,
    userId: config.userId,
    client: config.client,
    eventId,
    event: notice.input.event,
    // `hook install` adds the command without a matcher.
    matcher: "",
    command: HOOK_COMMAND,
  };
  if (config.userEmail) event.userEmail = config.userEmail;
  if (notice.input.sessionId) event.sessionId = notice.input.sessionId;
  return event;
}

export interface IngestAnswer {
  accepted?: number;
  duplicates?: number;
  rejected?: Array<{ index?: number; reason?: string }>;
}

/** One Connect unary call over HTTP/2; resolves with the decoded JSON answer. */
export function connectUnary(
  baseUrl: string,
  path: string,
  apiKey: string,
  body: unknown,
  signal: AbortSignal,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    signal.throwIfAborted();
    const base = new URL(baseUrl);
    const session = connect(base.origin);
    const abort = () => session.destroy(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
    signal.addEventListener("abort", abort, { once: true });
    const finish = (err: Error | undefined, value?: unknown) => {
      signal.removeEventListener("abort", abort);
      session.close();
      if (err) reject(err);
      else resolve(value);
    };
    session.on("error", (err) => finish(err));
    const payload = JSON.stringify(body);
    const req = session.request({
      [constants.HTTP2_HEADER_METHOD]: "POST",
      [constants.HTTP2_HEADER_PATH]: base.pathname.replace(/\/+$/, "") + path,
      "content-type": "application/json",
      "connect-protocol-version": "1",
      authorization: `Bearer ${apiKey}`,
      "user-agent": USER_AGENT,
    });
    let status = 0;
    const chunks: Buffer[] = [];
    req.on("response", (headers) => {
      status = Number(headers[constants.HTTP2_HEADER_STATUS] ?? 0);
    });
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("error", (err) => finish(err));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let json: unknown;
      try {
        json = text === "" ? {} : JSON.parse(text);
      } catch {
        return finish(new Error(`ingest answered HTTP ${status} with a body that is not JSON`));
      }
      if (status !== 200) {
        const err = json as { code?: string; message?: string };
        return finish(
          new Error(
            `ingest answered HTTP ${status}${err.code ? ` ${err.code}` : ""}${err.message ? `: ${err.message}` : ""}`,
          ),
        );
      }
      finish(undefined, json);
    });
    req.end(payload);
  });
}

export function usageTarget(config: UsageConfig): Target {
  return {
    name: "usage",
    async send(notice, signal) {
      const answer = (await connectUnary(
        config.url,
        INGEST_PATH,
        config.apiKey,
        { events: [hookTelemetryEvent(config, notice)] },
        signal,
      )) as IngestAnswer;
      const rejected = answer.rejected?.[0];
      if (rejected) throw new Error(`ingest rejected the event: ${rejected.reason ?? "no reason given"}`);
    },
  };
}
