// SessionService (public, /api/v0/sessions...), built from its dependencies.
import type { ServiceImpl } from "@connectrpc/connect";
import type { Kysely } from "kysely";
import type { SessionService } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import type { Database } from "../database.js";
import { requireRole } from "../platform/auth.js";
import { principalOf, type Principal } from "../platform/context.js";
import { keysetPage, parsePageLimit, type CursorStore } from "../platform/cursors.js";
import { notFound } from "../platform/errors.js";
import type { TelemetrySink } from "../platform/telemetry.js";
import { onConnection, stopIfAbandoned } from "../platform/abandoned.js";
import { ownerFilter, WRITERS } from "./access.js";
import { checkAttachments } from "./attachments.js";
import { claimIdempotencyKey } from "./idempotency-queries.js";
import { idempotencyKeyOf, requestHash } from "./idempotency.js";
import { listRole, messageText, optionalId } from "./inputs.js";
import { createLifecycleHandlers } from "./lifecycle-handlers.js";
import { createEventHandlers, type EventDeps } from "./event-handlers.js";
import { listSessionsPage, type SessionListPosition, type SessionListRow } from "./list-queries.js";
import { findMessage, listMessagesPage, type MessagePosition } from "./message-queries.js";
import { findSession, findSessionsAmong, lockSession, touchSession, writeTime } from "./session-queries.js";
import { newId } from "../platform/ids.js";
import { mergeSettings, parseSettingsUpdate, refuseHeldSessions } from "./settings.js";
import { findSessionWithTree, treeOf } from "./tree-queries.js";
import { requireOrgComputer, storeUserMessage } from "./user-message.js";
import { sessionListView, sessionView, toMessage, toMessageListItem, visibleStatus } from "./views.js";

export interface SessionsDeps extends EventDeps {
  db: Kysely<Database>;
  cursors: CursorStore;
  telemetry: TelemetrySink;
}

export function createSessionService(deps: SessionsDeps): Partial<ServiceImpl<typeof SessionService>> {
  const { db, cursors, telemetry } = deps;

  async function visibleSession(principal: Principal, sessionId: string, signal: AbortSignal) {
    const row = await onConnection(db, signal, (conn) =>
      findSession(conn, principal.orgId, sessionId, ownerFilter(principal)),
    );
    if (!row) throw notFound("session");
    return row;
  }

  return {
    ...createLifecycleHandlers(deps),
    ...createEventHandlers(deps),
    async listSessions(req, ctx) {
      const principal = principalOf(ctx);
      const limit = parsePageLimit(req.limit);
      const computerId = optionalId("computerId", req.computerId);
      const ownerId = ownerFilter(principal);
      const scope = {
        list: "sessions",
        filters: { computerId, visibility: ownerId === undefined ? "organization" : "own" },
      };
      // A listing keeps the order of its first page: its snapshot travels in the cursor.
      let snapshot: Omit<SessionListPosition, "at" | "id"> | undefined;
      const { rows, pagination } = await keysetPage<SessionListRow, SessionListPosition>({
        cursors,
        principal,
        scope,
        cursor: req.cursor,
        limit,
        fetch: async (count, after) => {
          const page = await onConnection(db, ctx.signal, (conn) =>
            listSessionsPage(conn, { orgId: principal.orgId, ownerId, computerId }, count, after),
          );
          stopIfAbandoned(ctx.signal);
          snapshot = page.snapshot;
          return page.rows;
        },
        positionOf: (last) => ({ ...snapshot!, at: last.position_ms, id: last.id }),
      });
      return { sessions: sessionListView(rows), pagination };
    },

    async getSession(req, ctx) {
      const principal = principalOf(ctx);
      const computerId = optionalId("computerId", req.computerId);
      // One statement: the session and the rest of its tree, for its token usage.
      const found = await onConnection(db, ctx.signal, (conn) =>
        findSessionWithTree(conn, principal.orgId, req.sessionId, ownerFilter(principal)),
      );
      if (!found || (computerId !== undefined && found.computer_id !== computerId)) throw notFound("session");
      return sessionView(found, found.tree);
    },

    async updateSession(req, ctx) {
      const principal = principalOf(ctx);
      requireRole(principal, WRITERS, "updating a session");
      const patch = parseSettingsUpdate(req.sessionSettings);
      const row = await db.transaction().execute(async (trx) => {
        stopIfAbandoned(ctx.signal);
        const locked = await lockSession(trx, principal.orgId, req.sessionId, ownerFilter(principal));
        if (!locked) throw notFound("session");
        if (Object.keys(patch).length === 0) return locked;
        const reported = patch.childInclusiveTokenUsageBySessionId;
        const held = await findSessionsAmong(trx, principal.orgId, Object.keys(reported ?? {}));
        refuseHeldSessions(locked.id, reported, held);
        return touchSession(trx, locked, writeTime(locked), {
          settings: JSON.stringify(mergeSettings(locked.settings, patch)),
        });
      });
      return sessionView(row, await treeOf(db, row));
    },

    async listMessages(req, ctx) {
      const principal = principalOf(ctx);
      const limit = parsePageLimit(req.limit);
      const role = listRole(req.role);
      const computerId = optionalId("computerId", req.computerId);
      const session = await visibleSession(principal, req.sessionId, ctx.signal);
      const scope = { list: "sessions.messages", filters: { sessionId: session.id, role, computerId } };
      const { rows, pagination } = await keysetPage({
        cursors,
        principal,
        scope,
        cursor: req.cursor,
        limit,
        fetch: (count, after: MessagePosition | undefined) =>
          onConnection(db, ctx.signal, (conn) =>
            listMessagesPage(conn, principal.orgId, { sessionId: session.id, role, computerId }, count, after),
          ),
        positionOf: (last): MessagePosition => ({ seq: last.seq }),
      });
      return { messages: rows.map(toMessageListItem), pagination };
    },

    async getMessage(req, ctx) {
      const principal = principalOf(ctx);
      const computerId = optionalId("computerId", req.computerId);
      const session = await visibleSession(principal, req.sessionId, ctx.signal);
      const row = await findMessage(db, principal.orgId, session.id, req.messageId);
      if (!row || (computerId !== undefined && row.computer_id !== computerId)) throw notFound("message");
      return toMessage(row);
    },

    async postMessage(req, ctx) {
      const principal = principalOf(ctx);
      requireRole(principal, WRITERS, "posting a message");
      // Everything about the request is checked before anything is stored.
      const text = messageText("text", req.text);
      const attachments = checkAttachments(req.images, req.files);
      const computerId = optionalId("computerId", req.computerId);
      const key = idempotencyKeyOf(ctx);
      return db.transaction().execute(async (trx) => {
        stopIfAbandoned(ctx.signal);
        const session = await lockSession(trx, principal.orgId, req.sessionId, ownerFilter(principal));
        if (!session) throw notFound("session");
        // The message is sent to that computer: it must be one of the organization's.
        await requireOrgComputer(trx, principal.orgId, computerId);
        const messageId = newId();
        // Posting to an idle session queues work; pending and running stay as they are.
        const status = session.status === "idle" ? "pending" : session.status;
        const result = { messageId, status: status === "pending" ? "pending" : visibleStatus(session) };
        if (key !== undefined) {
          const hash = requestHash({
            sessionId: req.sessionId,
            text,
            images: req.images.map((i) => i.data),
            files: req.files.map((f) => [f.data, f.parsedData, f.name, f.path]),
            computerId,
          });
          const first = await claimIdempotencyKey(
            trx,
            { orgId: principal.orgId, credentialId: principal.credentialId, key },
            hash,
            result,
          );
          if (first) return first;
        }
        const at = writeTime(session);
        const stored = await storeUserMessage(trx, telemetry, session, at, {
          id: messageId,
          text,
          computerId: computerId ?? session.computer_id,
          authorUserId: principal.userId,
          ...attachments,
        });
        await touchSession(
          trx,
          session,
          at,
          {
            message_count: session.message_count + stored.length,
            status,
            pending_since: session.status === "idle" ? at : session.pending_since,
          },
          stored,
        );
        return result;
      });
    },
  };
}
