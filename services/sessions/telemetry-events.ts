// The telemetry events (docs/telemetry.md) that session activity emits, recorded in the same
// transaction as the write they describe. Each carries an event_id derived from what it
// describes, so a replayed ingest of the same event is stored once.
import type { TelemetryEventInit } from "../platform/telemetry.js";
import type { MessageRow, SessionRow, StoredTokenUsage } from "./tables.js";

export function sessionStartEvent(
  session: Pick<SessionRow, "id" | "org_id" | "user_id" | "client" | "autonomy_mode" | "created_at">,
): TelemetryEventInit {
  return {
    type: "session_start",
    time: session.created_at.toISOString(),
    orgId: session.org_id,
    userId: session.user_id,
    sessionId: session.id,
    client: session.client,
    eventId: `session_start:${session.id}`,
    autonomyMode: session.autonomy_mode,
  };
}

/**
 * A `message` event per user or assistant message (docs/telemetry.md: the format knows no other
 * roles; tool and system messages are stored but not counted). A user message counts for the user
 * who posted it, an assistant message for the session's owner.
 */
export function messageEvents(session: SessionRow, messages: readonly MessageRow[]): TelemetryEventInit[] {
  return messages
    .filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => ({
      type: "message",
      time: m.created_at.toISOString(),
      orgId: session.org_id,
      userId: m.author_user_id ?? session.user_id,
      sessionId: session.id,
      client: session.client,
      eventId: `message:${m.id}`,
      role: m.role,
    }));
}

export interface ModelUsageReport {
  modelId: string;
  modelTier: string;
  usage: StoredTokenUsage;
}

/** A `model_usage` event per usage report of a run; `batchId` makes their event IDs unique. */
export function modelUsageEvents(
  session: SessionRow,
  at: Date,
  batchId: string,
  reports: readonly ModelUsageReport[],
): TelemetryEventInit[] {
  return reports.map((r, i) => ({
    type: "model_usage",
    time: at.toISOString(),
    orgId: session.org_id,
    userId: session.user_id,
    sessionId: session.id,
    client: session.client,
    eventId: `model_usage:${batchId}:${i}`,
    modelId: r.modelId,
    modelTier: r.modelTier,
    inputTokens: r.usage.inputTokens,
    outputTokens: r.usage.outputTokens,
    cacheReadTokens: r.usage.cacheReadTokens,
    cacheWriteTokens: r.usage.cacheCreationTokens,
  }));
}
