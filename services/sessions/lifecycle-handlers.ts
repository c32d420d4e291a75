// SessionService's lifecycle methods (public): CreateSession (POST /api/v0/sessions, 201),
// InterruptSession (POST /api/v0/sessions/{id}/interrupt) and DeleteSession
// (DELETE /api/v0/sessions/{id}, 204). sessions.proto says what each does.
import type { ServiceImpl } from "@connectrpc/connect";
import type { SessionService } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { onConnection, stopIfAbandoned } from "../platform/abandoned.js";
import { requireRole } from "../platform/auth.js";
import { principalOf } from "../platform/context.js";
import { invalidArgument, notFound } from "../platform/errors.js";
import { newId } from "../platform/ids.js";
import { ownerFilter, WRITERS } from "./access.js";
import type { SessionsDeps } from "./handlers.js";
import { claimIdempotencyKey } from "./idempotency-queries.js";
import { idempotencyKeyOf, requestHash } from "./idempotency.js";
import { MAX_TITLE_CHARS, messageText, optionalId } from "./inputs.js";
import { deleteSession, findSession, lockSession, touchSession, writeTime } from "./session-queries.js";
import { startSession } from "./session-start.js";
import { parseSettingsUpdate } from "./settings.js";
import { treeOf } from "./tree-queries.js";
import { requireOrgComputer } from "./user-message.js";
import { sessionView } from "./views.js";

/** Sessions started through the public API count in analytics as this client and autonomy mode. */
const API_CLIENT = "non-interactive-cli";
const API_AUTONOMY_MODE = "manual";

type LifecycleMethods = Pick<
  ServiceImpl<typeof SessionService>,
  "createSession" | "interruptSession" | "deleteSession"
>;

export function createLifecycleHandlers(deps: Pick<SessionsDeps, "db" | "telemetry">): LifecycleMethods {
  const { db, telemetry } = deps;

  return {
    async createSession(req, ctx) {
      const principal = principalOf(ctx);
      requireRole(principal, WRITERS, "creating a session");
      // Everything about the request is checked before anything is stored.
      if (req.title !== undefined && req.title.length > MAX_TITLE_CHARS)
        throw invalidArgument("title", `must be at most ${MAX_TITLE_CHARS} characters`);
      const computerId = optionalId("computerId", req.computerId);
      const settings = parseSettingsUpdate(req.sessionSettings);
      const text = req.text === undefined ? undefined : messageText("text", req.text);
      const key = idempotencyKeyOf(ctx);
      const sessionId = await db.transaction().execute(async (trx) => {
        stopIfAbandoned(ctx.signal);
        await requireOrgComputer(trx, principal.orgId, computerId);
        const id = newId();
        if (key !== undefined) {
          const hash = requestHash({
            create: "session",
            title: req.title,
            computerId,
            sessionSettings: settings,
            text,
          });
          const first = await claimIdempotencyKey(
            trx,
            { orgId: principal.orgId, credentialId: principal.credentialId, key },
            hash,
            { sessionId: id },
          );
          if (first) return first.sessionId;
        }
        const row = await startSession(
          trx,
          telemetry,
          {
            id,
            orgId: principal.orgId,
            userId: principal.userId,
            parentSessionId: null,
            title: req.title ?? null,
            computerId: computerId ?? null,
            settings,
            client: API_CLIENT,
            autonomyMode: API_AUTONOMY_MODE,
          },
          text === undefined ? undefined : { id: newId(), text, authorUserId: principal.userId, images: [], files: [] },
        );
        return row.id;
      });
      // A retry with the key gets the session as it is now (it may have run meanwhile).
      const row = await onConnection(db, ctx.signal, (conn) => findSession(conn, principal.orgId, sessionId));
      if (!row) throw notFound("session");
      ctx.responseHeader.set("x-http-code", "201");
      return sessionView(row, await treeOf(db, row));
    },

    async interruptSession(req, ctx) {
      const principal = principalOf(ctx);
      requireRole(principal, WRITERS, "interrupting a session");
      await db.transaction().execute(async (trx) => {
        stopIfAbandoned(ctx.signal);
        const locked = await lockSession(trx, principal.orgId, req.sessionId, ownerFilter(principal));
        if (!locked) throw notFound("session");
        if (locked.status === "idle") return;
        const at = writeTime(locked);
        // Every user message so far counts as handled: the next claim hands a runner only what is
        // posted after the interrupt. The lease goes, so its runner is refused from its next call.
        await touchSession(trx, locked, at, {
          status: "idle",
          handled_seq: locked.message_count,
          pending_since: null,
          lease_token: null,
          lease_owner: null,
          lease_expires_at: null,
          // A run that was going ends here; a session that only waited for one had none.
          ...(locked.status === "running" ? { completed_at: at } : {}),
        });
      });
      return { status: "idle" };
    },

    async deleteSession(req, ctx) {
      const principal = principalOf(ctx);
      requireRole(principal, WRITERS, "deleting a session");
      await db.transaction().execute(async (trx) => {
        stopIfAbandoned(ctx.signal);
        const locked = await lockSession(trx, principal.orgId, req.sessionId, ownerFilter(principal));
        if (!locked) throw notFound("session");
        await deleteSession(trx, locked);
      });
      ctx.responseHeader.set("x-http-code", "204");
      return {};
    },
  };
}
