// The HTTP headers a route reads or sets beyond the request message and the answer's body, which
// the protos only mention in comments: Idempotency-Key (sessions.proto, PostMessage and
// CreateSession), Last-Event-ID (StreamSessionEvents), If-None-Match and ETag (analytics
// caching, services/analytics/read/caching.ts), and the headers of every answer (X-Request-Id,
// the rate limit's, Retry-After on a 429: services/platform/rate-limit.ts).
import type { RestRoute } from "./routes.js";

const IDEMPOTENT = new Set([
  "agentplane.sessions.v1alpha1.SessionService.PostMessage",
  "agentplane.sessions.v1alpha1.SessionService.CreateSession",
]);
const RESUMABLE = new Set(["agentplane.sessions.v1alpha1.SessionService.StreamSessionEvents"]);
const CACHED = new Set(["agentplane.analytics.v1.AnalyticsService"]);

/** The header parameters of a route. */
export function headerParameters(route: RestRoute): Record<string, unknown>[] {
  const where = `${route.service.typeName}.${route.method.name}`;
  const params: Record<string, unknown>[] = [];
  if (IDEMPOTENT.has(where)) {
    params.push({
      name: "Idempotency-Key",
      in: "header",
      required: false,
      description:
        "Makes a retry safe: kept 24 hours per organization and credential; a retry with the same key and body answers as the first request did and stores nothing twice; the same key with another body is a 409.",
      schema: { type: "string", pattern: "^[\\x21-\\x7E]{1,255}$" },
    });
  }
  if (RESUMABLE.has(where)) {
    params.push({
      name: "Last-Event-ID",
      in: "header",
      required: false,
      description: "Resumes after this eventId, as `after` does (an EventSource sends it when it reconnects).",
      schema: { type: "string" },
    });
  }
  if (CACHED.has(route.service.typeName)) {
    params.push({
      name: "If-None-Match",
      in: "header",
      required: false,
      description: "An ETag of an earlier answer: a 304 without a body when the answer is unchanged.",
      schema: { type: "string" },
    });
  }
  return params;
}

/** The headers of a route's success answer. */
export function successHeaders(route: RestRoute): Record<string, unknown> {
  const headers: Record<string, unknown> = { ...COMMON_HEADERS };
  if (CACHED.has(route.service.typeName)) {
    headers["ETag"] = { description: "The answer's validator, for If-None-Match.", schema: { type: "string" } };
  }
  return headers;
}

/** The headers of every answer that went through the rate limiter. */
export const COMMON_HEADERS: Readonly<Record<string, unknown>> = {
  "X-Request-Id": { description: "The request's ID (the client's own when it sent one).", schema: { type: "string" } },
  "RateLimit-Limit": { description: "Requests per minute of the credential's plan.", schema: { type: "integer" } },
  "RateLimit-Remaining": { description: "Requests left in the current window.", schema: { type: "integer" } },
  "RateLimit-Reset": { description: "Seconds until the window ends.", schema: { type: "integer" } },
};

export const RETRY_AFTER = {
  "Retry-After": { description: "Seconds until the rate limit's window ends.", schema: { type: "integer" } },
};

/** On a 503 of the OTLP receiver, busy with other exports: when to send the export again. */
export const BUSY_RETRY_AFTER = {
  "Retry-After": {
    description: "Seconds to wait before sending the export again, when the receiver is busy.",
    schema: { type: "integer" },
  },
};
