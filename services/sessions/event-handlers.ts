// SessionService's event streams: WatchSessionEvents (gRPC, typed) and StreamSessionEvents
// (GET /api/v0/sessions/{id}/events, Server-Sent Events in google.api.HttpBody chunks, which
// Envoy's transcoder and the TypeScript edge pass on as they come). Both read event-stream.ts.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { Kysely } from "kysely";
import {
  type SessionEventSchema,
  SessionEventSchema as EventSchema,
} from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import type { SessionService, WatchSessionEventsRequest } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import type { Database } from "../database.js";
import { onConnection } from "../platform/abandoned.js";
import { principalOf } from "../platform/context.js";
import { invalidArgument, notFound } from "../platform/errors.js";
import { printedMessage } from "../platform/printed-json.js";
import { ownerFilter } from "./access.js";
import type { SessionWakeups } from "./event-wakeups.js";
import { sessionEventStream, type StreamItem } from "./event-stream.js";
import { findSession } from "./session-queries.js";
import type { SessionEventRow } from "./tables.js";

export interface EventDeps {
  db: Kysely<Database>;
  wakeups: SessionWakeups;
  /** Aborted when the server begins to stop: the streams end, and clients resume elsewhere. */
  draining: AbortSignal;
  heartbeatMs?: number;
}

const EVENT_ID = /^\d{1,9}$/;
const encoder = new TextEncoder();

/** The position a watch starts after: `after`, else Last-Event-ID, else undefined (from now). */
function requestedAfter(
  req: WatchSessionEventsRequest,
  ctx: HandlerContext,
): { seq: number; field: string } | undefined {
  const [raw, field] =
    req.after !== undefined && req.after !== ""
      ? [req.after, "after"]
      : [ctx.requestHeader.get("last-event-id") ?? undefined, "Last-Event-ID"];
  if (raw === undefined || raw === "") return undefined;
  if (!EVENT_ID.test(raw))
    throw invalidArgument(field, `must be an eventId (a whole number), got ${JSON.stringify(raw.slice(0, 40))}`);
  return { seq: Number(raw), field };
}

/**
 * Ends a stream that stopped because the call's own deadline passed as DEADLINE_EXCEEDED: left to
 * end normally it would read as OK, which for a watch means the session was deleted. A client
 * that left and a server that stops (draining) end it quietly, as before.
 */
function throwIfDeadlinePassed(ctx: HandlerContext): void {
  const reason: unknown = ctx.signal.reason;
  if (ctx.signal.aborted && reason instanceof ConnectError && reason.code === Code.DeadlineExceeded) throw reason;
}

export function toSessionEvent(row: SessionEventRow): MessageInitShape<typeof SessionEventSchema> {
  return {
    eventId: String(row.seq),
    type: row.type,
    createdAt: row.created_at.getTime(),
    sessionId: row.session_id,
    ...row.data,
  };
}

/** One Server-Sent Events record: the event's id, and its JSON as the data line. */
export function sseRecord(item: StreamItem): string {
  if (item.kind === "heartbeat") return ": heartbeat\n\n";
  return `id: ${item.event.seq}\ndata: ${printedMessage(EventSchema, toSessionEvent(item.event))}\n\n`;
}

type EventMethods = Pick<ServiceImpl<typeof SessionService>, "watchSessionEvents" | "streamSessionEvents">;

export function createEventHandlers(deps: EventDeps): EventMethods {
  const { db, wakeups, draining } = deps;

  /** Checks the request and the caller's access before the stream starts (errors are then plain answers). */
  async function open(req: WatchSessionEventsRequest, ctx: HandlerContext) {
    const principal = principalOf(ctx);
    const after = requestedAfter(req, ctx);
    const session = await onConnection(db, ctx.signal, (conn) =>
      findSession(conn, principal.orgId, req.sessionId, ownerFilter(principal)),
    );
    if (!session) throw notFound("session");
    if (after !== undefined && after.seq > session.last_event_seq)
      throw invalidArgument(
        after.field,
        `the session has no event ${after.seq} (its last is ${session.last_event_seq})`,
      );
    return sessionEventStream({
      db,
      wakeups,
      sessionId: session.id,
      afterSeq: after?.seq ?? session.last_event_seq,
      signal: AbortSignal.any([ctx.signal, draining]),
      heartbeatMs: deps.heartbeatMs,
    });
  }

  return {
    async *watchSessionEvents(req, ctx) {
      for await (const item of await open(req, ctx)) if (item.kind === "event") yield toSessionEvent(item.event);
      throwIfDeadlinePassed(ctx);
    },

    async *streamSessionEvents(req, ctx) {
      const items = await open(req, ctx);
      ctx.responseHeader.set("cache-control", "no-store");
      // The first chunk sends the headers at once: a client knows it is connected before any event.
      yield { contentType: "text/event-stream", data: encoder.encode(": connected\n\n") };
      for await (const item of items) yield { contentType: "", data: encoder.encode(sseRecord(item)) };
      throwIfDeadlinePassed(ctx);
    },
  };
}
