// childInclusiveTokenUsageBySessionId as a client writes it (PATCH, CreateSession): the inclusive
// usage of children the client ran itself, which this service does not hold. A key naming a
// session the service does hold in the organization would count usage twice: the session's own
// ID adds the session to itself, a held child is already counted from its stored usage, and an
// ancestor (or any other session of the tree) already includes this session, so the ancestor's
// inclusive usage would include itself. A session of another tree is counted in its own tree.
// Keys naming no session of the organization are kept as given; another organization's session
// IDs are among them (the service does not tell those apart from client-side IDs).
import type { Executor } from "../database.js";
import { invalidArgument } from "../platform/errors.js";
import type { StoredTokenUsage } from "./tables.js";

/** Throws a 400 naming the first key of `reported` that is a session of the organization. */
export async function refuseHeldSessions(
  db: Executor,
  orgId: string,
  sessionId: string,
  reported: Readonly<Record<string, StoredTokenUsage>> | undefined,
  path = "sessionSettings.childInclusiveTokenUsageBySessionId",
): Promise<void> {
  const keys = Object.keys(reported ?? {});
  if (keys.length === 0) return;
  const held = await db.selectFrom("sessions").select(["id", "parent_session_id"]).where("org_id", "=", orgId).where("id", "in", keys).execute();
  if (held.length === 0) return;
  const parentOf = new Map(held.map((r) => [r.id, r.parent_session_id]));
  const key = keys.find((k) => parentOf.has(k))!;
  if (key === sessionId) throw invalidArgument(`${path}.${key}`, "is this session's own ID; its usage is tokenUsage, not a child's");
  if (parentOf.get(key) === sessionId) throw invalidArgument(`${path}.${key}`, "is a child session this service tracks; its usage cannot be reported");
  throw invalidArgument(`${path}.${key}`, "is a session this service holds and not a child of this one (its parent, an ancestor or an unrelated session); only children run outside this service can be reported");
}
