// OrganizationService's webhook methods (public; owners and managers): CreateWebhook
// (POST /api/v0/webhooks, 201), ListWebhooks, DeleteWebhook (204), ListWebhookDeliveries.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Kysely } from "kysely";
import type {
  OrganizationService,
  WebhookDeliverySchema,
  WebhookSchema,
} from "../../../gen/agentplane/organization/v1alpha1/organization_pb.js";
import type { Database } from "../../database.js";
import { onConnection } from "../../platform/abandoned.js";
import { requireRole } from "../../platform/auth.js";
import { principalOf, type Principal } from "../../platform/context.js";
import { keysetPage, parsePageLimit, type CursorStore } from "../../platform/cursors.js";
import { conflict, invalidArgument, notFound } from "../../platform/errors.js";
import { newId } from "../../platform/ids.js";
import type { WebhookEventType } from "../tables.js";
import type { WebhookConfig } from "./config.js";
import {
  deleteEndpoint,
  findEndpoint,
  insertEndpoint,
  listDeliveriesPage,
  listEndpointsPage,
  type NewestFirstPosition,
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
} from "./queries.js";
import { newWebhookSecret } from "./signing.js";
import { checkWebhookTarget, parseWebhookUrl } from "./target-policy.js";

export const WEBHOOK_EVENTS: readonly WebhookEventType[] = [
  "session.status_changed",
  "message.created",
  "computer.status_changed",
];
export const MAX_WEBHOOKS_PER_ORG = 20;
const MAX_DESCRIPTION_CHARS = 500;
const MANAGERS = ["owner", "manager"] as const;

export interface WebhookDeps {
  db: Kysely<Database>;
  cursors: CursorStore;
  config: WebhookConfig;
}

function checkEvents(events: readonly string[]): WebhookEventType[] {
  if (events.length === 0) throw invalidArgument("events", `must name at least one of ${WEBHOOK_EVENTS.join(", ")}`);
  for (const [i, e] of events.entries()) {
    if (!(WEBHOOK_EVENTS as readonly string[]).includes(e))
      throw invalidArgument(`events[${i}]`, `must be one of ${WEBHOOK_EVENTS.join(", ")}, got "${e.slice(0, 60)}"`);
    if (events.indexOf(e) !== i) throw invalidArgument(`events[${i}]`, `names ${e} twice`);
  }
  return events as WebhookEventType[];
}

function toWebhook(row: WebhookEndpointRow, withSecret = false): MessageInitShape<typeof WebhookSchema> {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    description: row.description,
    createdAt: row.created_at.getTime(),
    ...(withSecret ? { secret: row.secret } : {}),
  };
}

function toDelivery(row: WebhookDeliveryRow): MessageInitShape<typeof WebhookDeliverySchema> {
  return {
    id: row.id,
    event: row.event_type,
    status: row.status,
    attempts: row.attempts,
    ...(row.last_http_status === null ? {} : { lastHttpStatus: row.last_http_status }),
    ...(row.last_error === null ? {} : { lastError: row.last_error }),
    ...(row.status === "pending" ? { nextAttemptAt: row.next_attempt_at.getTime() } : {}),
    createdAt: row.created_at.getTime(),
    ...(row.completed_at === null ? {} : { completedAt: row.completed_at.getTime() }),
  };
}

function positionOf<Row extends { created_at: Date; id: string }>(last: Row): NewestFirstPosition {
  return { createdAt: last.created_at.toISOString(), id: last.id };
}

type WebhookMethods = Pick<
  ServiceImpl<typeof OrganizationService>,
  "createWebhook" | "listWebhooks" | "deleteWebhook" | "listWebhookDeliveries"
>;

export function createWebhookHandlers(deps: WebhookDeps): WebhookMethods {
  const { db, cursors, config } = deps;
  const managerOf = (principal: Principal, action: string) => requireRole(principal, MANAGERS, action);

  return {
    async createWebhook(req, ctx) {
      const principal = principalOf(ctx);
      managerOf(principal, "adding a webhook");
      const url = parseWebhookUrl(req.url, config.allowPrivateTargets);
      const events = checkEvents(req.events);
      if (req.description.length > MAX_DESCRIPTION_CHARS)
        throw invalidArgument("description", `must be at most ${MAX_DESCRIPTION_CHARS} characters`);
      await checkWebhookTarget(url, config.allowPrivateTargets);
      const row = await insertEndpoint(
        db,
        {
          id: newId(),
          orgId: principal.orgId,
          url: url.toString(),
          events,
          description: req.description,
          secret: newWebhookSecret(),
        },
        MAX_WEBHOOKS_PER_ORG,
      );
      if (!row) throw conflict(`the organization has ${MAX_WEBHOOKS_PER_ORG} webhooks, the most it may have`);
      ctx.responseHeader.set("x-http-code", "201");
      return toWebhook(row, true);
    },

    async listWebhooks(req, ctx) {
      const principal = principalOf(ctx);
      managerOf(principal, "listing webhooks");
      const { rows, pagination } = await keysetPage({
        cursors,
        principal,
        scope: { list: "organization.webhooks" },
        cursor: req.cursor,
        limit: parsePageLimit(req.limit),
        fetch: (count, after: NewestFirstPosition | undefined) =>
          onConnection(db, ctx.signal, (conn) => listEndpointsPage(conn, principal.orgId, count, after)),
        positionOf: positionOf<WebhookEndpointRow>,
      });
      return { webhooks: rows.map((r) => toWebhook(r)), pagination };
    },

    async deleteWebhook(req, ctx) {
      const principal = principalOf(ctx);
      managerOf(principal, "deleting a webhook");
      if (!(await deleteEndpoint(db, principal.orgId, req.webhookId))) throw notFound("webhook");
      ctx.responseHeader.set("x-http-code", "204");
      return {};
    },

    async listWebhookDeliveries(req, ctx) {
      const principal = principalOf(ctx);
      managerOf(principal, "listing webhook deliveries");
      const limit = parsePageLimit(req.limit);
      const endpoint = await findEndpoint(db, principal.orgId, req.webhookId);
      if (!endpoint) throw notFound("webhook");
      const { rows, pagination } = await keysetPage({
        cursors,
        principal,
        scope: { list: "organization.webhook-deliveries", filters: { webhookId: endpoint.id } },
        cursor: req.cursor,
        limit,
        fetch: (count, after: NewestFirstPosition | undefined) =>
          onConnection(db, ctx.signal, (conn) => listDeliveriesPage(conn, principal.orgId, endpoint.id, count, after)),
        positionOf: positionOf<WebhookDeliveryRow>,
      });
      return { deliveries: rows.map(toDelivery), pagination };
    },
  };
}
