// Which organization an internal call may act on. A service account bound to an organization,
// and a user's API key (on the few internal methods that take one), act on their own
// organization only, whatever the request names; an unbound service account acts on the
// organization the request names. Internal handlers go through these helpers for every
// organization they read or write.
import type { HandlerContext } from "@connectrpc/connect";
import { invalidArgument, notFound, permissionDenied, unauthenticated } from "./errors.js";
import { kPrincipal, kWorkload } from "./context.js";

/** The organization the caller is confined to, or undefined for an unbound service account. */
export function boundOrg(ctx: HandlerContext): string | undefined {
  const workload = ctx.values.get(kWorkload);
  if (workload) return workload.orgId;
  const principal = ctx.values.get(kPrincipal);
  if (principal) return principal.orgId;
  throw unauthenticated("missing credentials");
}

/**
 * The organization a request that names one (in `field`) acts on. A confined caller naming
 * another organization is refused with PERMISSION_DENIED, before anything is read or written.
 * `requested` may be empty for a confined caller (it means its own organization).
 */
export function actingOrg(ctx: HandlerContext, requested: string | undefined, field: string): string {
  const bound = boundOrg(ctx);
  const given = requested === undefined || requested === "" ? undefined : requested;
  if (bound === undefined) {
    if (given === undefined) throw invalidArgument(field, "is required");
    return given;
  }
  if (given !== undefined && given !== bound)
    throw permissionDenied(`${field}: this credential may act only for its own organization`);
  return bound;
}

/**
 * Like actingOrg, for requests where naming no organization means "any": undefined only for an
 * unbound service account that named none.
 */
export function actingOrgOrAny(ctx: HandlerContext, requested: string | undefined, field: string): string | undefined {
  const bound = boundOrg(ctx);
  if (bound === undefined) return requested === undefined || requested === "" ? undefined : requested;
  return actingOrg(ctx, requested, field);
}

/**
 * Guards a resource found by its own ID (a session, a host): one of another organization is
 * answered as if it did not exist (`what` not found), so a confined caller learns nothing of it.
 */
export function requireOwnOrg(ctx: HandlerContext, orgId: string, what: string): void {
  const bound = boundOrg(ctx);
  if (bound !== undefined && bound !== orgId) throw notFound(what);
}
