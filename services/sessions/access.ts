// Who may do what with sessions: members and guests see only their own sessions, owners and
// managers every session of their organization; guests read but never write.
import type { Principal } from "../platform/context.js";

/** The roles that may create, change, post to, interrupt and delete sessions. */
export const WRITERS = ["owner", "manager", "member"] as const;

/** The owner a caller's session lookups are limited to: undefined for owners and managers. */
export function ownerFilter(principal: Principal): string | undefined {
  return principal.role === "owner" || principal.role === "manager" ? undefined : principal.userId;
}
