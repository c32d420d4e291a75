// SessionRunnerService (internal gRPC): session creation and the agent-runner side. Callers hold
// a service account with the sessions.runner scope; one bound to an organization acts only on
// that organization's sessions (platform/tenancy.ts). Requests name their organization, or
// reach a session by its ID and prove they run it with a lease token.
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Kysely } from "kysely";
import type { SessionRunnerService } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import type { Database } from "../database.js";
import { findOrganization, findUser } from "../organization/queries.js";
import { invalidArgument, notFound } from "../platform/errors.js";
import type { TelemetrySink } from "../platform/telemetry.js";
import { actingOrg, actingOrgOrAny, boundOrg, requireOwnOrg } from "../platform/tenancy.js";
import { AUTONOMY_MODES, CLIENTS, MAX_TITLE_CHARS, oneOf, optionalId, requiredId } from "./inputs.js";
import {
  DEFAULT_LEASE_SECONDS,
  MAX_LEASE_SECONDS,
  MIN_LEASE_SECONDS,
  lockNextClaimable,
  newLeaseToken,
  renewLease,
  requireLease,
} from "./lease-queries.js";
import { attachmentsOf, insertMessages, messageExists, userMessagesAfter } from "./message-queries.js";
import {
  findSession,
  findSessionById,
  lockSessionById,
  lockedNow,
  touchSession,
  writeTime,
} from "./session-queries.js";
import { newId } from "../platform/ids.js";
import { checkModelUsage, checkNewMessages } from "./runner-input.js";
import { parseSettingsUpdate } from "./settings.js";
import { messageEvents, modelUsageEvents } from "./telemetry-events.js";
import { startSession } from "./session-start.js";
import { requireOrgComputer } from "./user-message.js";
import { treeOf } from "./tree-queries.js";
import { sessionView, toAttachment, toMessage } from "./views.js";

export interface RunnerDeps {
  db: Kysely<Database>;
  telemetry: TelemetrySink;
}

function leaseSeconds(field: string, value: number | undefined): number {
  if (value === undefined) return DEFAULT_LEASE_SECONDS;
  if (!Number.isInteger(value) || value < MIN_LEASE_SECONDS || value > MAX_LEASE_SECONDS) {
    throw invalidArgument(field, `must be ${MIN_LEASE_SECONDS} to ${MAX_LEASE_SECONDS} seconds, got ${value}`);
  }
  return value;
}

export function createSessionRunnerService(deps: RunnerDeps): Partial<ServiceImpl<typeof SessionRunnerService>> {
  const { db, telemetry } = deps;

  return {
    async createSession(req, ctx: HandlerContext) {
      const orgId = requiredId("orgId", actingOrg(ctx, req.orgId, "orgId"));
      const userId = requiredId("userId", req.userId);
      if (req.title !== undefined && req.title.length > MAX_TITLE_CHARS)
        throw invalidArgument("title", `must be at most ${MAX_TITLE_CHARS} characters`);
      const computerId = optionalId("computerId", req.computerId);
      const parentSessionId = optionalId("parentSessionId", req.parentSessionId);
      const settings = parseSettingsUpdate(req.sessionSettings);
      const client = oneOf("client", req.client, CLIENTS) ?? "non-interactive-cli";
      const autonomyMode = oneOf("autonomyMode", req.autonomyMode, AUTONOMY_MODES) ?? "manual";
      const row = await db.transaction().execute(async (trx) => {
        if (!(await findUser(trx, orgId, userId))) {
          const org = await findOrganization(trx, orgId);
          throw org
            ? invalidArgument("userId", "is not a user of this organization")
            : invalidArgument("orgId", "is not an organization");
        }
        if (parentSessionId !== undefined && !(await findSession(trx, orgId, parentSessionId))) {
          throw invalidArgument("parentSessionId", "is not a session of this organization");
        }
        await requireOrgComputer(trx, orgId, computerId);
        return startSession(trx, telemetry, {
          orgId,
          userId,
          parentSessionId: parentSessionId ?? null,
          title: req.title ?? null,
          computerId: computerId ?? null,
          settings,
          client,
          autonomyMode,
        });
      });
      return sessionView(row, await treeOf(db, row));
    },

    async claimSession(req, ctx: HandlerContext) {
      const runnerId = requiredId("runnerId", req.runnerId);
      const seconds = leaseSeconds("leaseSeconds", req.leaseSeconds);
      const orgId = actingOrgOrAny(ctx, optionalId("orgId", req.orgId), "orgId");
      const claimed = await db.transaction().execute(async (trx) => {
        const row = await lockNextClaimable(trx, orgId);
        if (!row) return undefined;
        const at = await lockedNow(trx, row.updated_at);
        const leaseToken = newLeaseToken();
        const session = await touchSession(trx, row, at, {
          status: "running",
          lease_token: leaseToken,
          lease_owner: runnerId,
          lease_expires_at: new Date(at.getTime() + seconds * 1000),
          claimed_seq: row.message_count,
        });
        // Everything not answered by a finished run: after an expired lease, the same messages again.
        const pending = await userMessagesAfter(trx, row.id, row.handled_seq);
        const attachments = await attachmentsOf(
          trx,
          pending.map((m) => m.id),
        );
        return { session, leaseToken, pending, attachments };
      });
      if (!claimed) return {};
      const { session, leaseToken, pending, attachments } = claimed;
      return {
        session: sessionView(session, await treeOf(db, session)),
        leaseToken,
        orgId: session.org_id,
        pendingMessages: pending.map(toMessage),
        leaseExpiresAt: session.lease_expires_at!.getTime(),
        attachments: attachments.map(toAttachment),
      };
    },

    async renewLease(req, ctx: HandlerContext) {
      const sessionId = requiredId("sessionId", req.sessionId);
      const token = requiredId("leaseToken", req.leaseToken);
      const seconds = leaseSeconds("leaseSeconds", req.leaseSeconds);
      const orgId = boundOrg(ctx);
      const expires = await renewLease(db, sessionId, token, seconds, orgId);
      if (expires) return { leaseExpiresAt: expires.getTime() };
      const row = await findSessionById(db, sessionId);
      if (!row) throw notFound("session");
      requireOwnOrg(ctx, row.org_id, "session");
      requireLease(row, token); // throws: the lease is not held
      throw new Error("unreachable: lease held but not renewed");
    },

    async appendMessages(req, ctx: HandlerContext) {
      const sessionId = requiredId("sessionId", req.sessionId);
      const token = requiredId("leaseToken", req.leaseToken);
      const messages = checkNewMessages(req.messages);
      const reports = checkModelUsage(req.modelUsage);
      const ids = await db.transaction().execute(async (trx) => {
        const row = await lockSessionById(trx, sessionId);
        if (!row) throw notFound("session");
        requireOwnOrg(ctx, row.org_id, "session");
        requireLease(row, token);
        for (const [i, m] of messages.entries()) {
          if (m.parent_id && !(await messageExists(trx, row.id, m.parent_id))) {
            throw invalidArgument(`messages[${i}].parentId`, "is not a message of this session");
          }
        }
        if (messages.length === 0 && reports.length === 0) return [];
        const at = writeTime(row);
        const stored = await insertMessages(
          trx,
          { orgId: row.org_id, sessionId: row.id, lastSeq: row.message_count },
          at,
          messages,
        );
        const sum = (pick: (u: (typeof reports)[number]["usage"]) => number) =>
          reports.reduce((total, r) => total + pick(r.usage), 0);
        await telemetry.record([...messageEvents(row, stored), ...modelUsageEvents(row, at, newId(), reports)], trx);
        await touchSession(
          trx,
          row,
          at,
          {
            message_count: row.message_count + stored.length,
            input_tokens: row.input_tokens + sum((u) => u.inputTokens),
            output_tokens: row.output_tokens + sum((u) => u.outputTokens),
            cache_creation_tokens: row.cache_creation_tokens + sum((u) => u.cacheCreationTokens),
            cache_read_tokens: row.cache_read_tokens + sum((u) => u.cacheReadTokens),
            thinking_tokens: row.thinking_tokens + sum((u) => u.thinkingTokens),
            factory_credits: row.factory_credits + sum((u) => u.factoryCredits),
          },
          stored,
        );
        return stored.map((m) => m.id);
      });
      return { messageIds: ids };
    },

    async finishRun(req, ctx: HandlerContext) {
      const sessionId = requiredId("sessionId", req.sessionId);
      const token = requiredId("leaseToken", req.leaseToken);
      const row = await db.transaction().execute(async (trx) => {
        const locked = await lockSessionById(trx, sessionId);
        if (!locked) throw notFound("session");
        requireOwnOrg(ctx, locked.org_id, "session");
        requireLease(locked, token);
        // User messages posted during the run were not handed to it: they make the session pending again.
        const more = (await userMessagesAfter(trx, locked.id, locked.claimed_seq)).length > 0;
        const at = writeTime(locked);
        return touchSession(trx, locked, at, {
          status: more ? "pending" : "idle",
          completed_at: at,
          handled_seq: locked.claimed_seq,
          pending_since: more ? at : null,
          lease_token: null,
          lease_owner: null,
          lease_expires_at: null,
        });
      });
      return sessionView(row, await treeOf(db, row));
    },
  };
}
