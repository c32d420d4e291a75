// Who may ingest which events. A service account bound to an organization ingests for that
// organization only; a user's API key (the hooks path) for its own organization and its own
// user only. One event naming anything else refuses the whole call before anything is
// stored, so a credential can never add a single event, or credits, to someone else.
import type { HandlerContext } from "@connectrpc/connect";
import { kPrincipal } from "../../platform/context.js";
import { permissionDenied } from "../../platform/errors.js";
import { boundOrg } from "../../platform/tenancy.js";

interface Attributed {
  readonly orgId?: string | undefined;
  readonly userId?: string | undefined;
}

/**
 * Throws PERMISSION_DENIED when an event names an organization (or, with an API key, a user)
 * the caller may not ingest for. Events that name none are left to validation, which rejects
 * them one by one as it does any incomplete event.
 */
export function requireIngestAccess(ctx: HandlerContext, events: readonly Attributed[]): void {
  const orgId = boundOrg(ctx);
  const user = ctx.values.get(kPrincipal);
  for (const [i, e] of events.entries()) {
    if (orgId !== undefined && e.orgId && e.orgId !== orgId) {
      throw permissionDenied(`events[${i}].org_id: this credential may ingest only for its own organization`);
    }
    if (user !== undefined && e.userId && e.userId !== user.userId) {
      throw permissionDenied(`events[${i}].user_id: an API key may ingest only its own user's events`);
    }
  }
}
