// Runner leases. A claim picks the session that has waited longest among those that are pending
// or running under an expired lease, with FOR UPDATE SKIP LOCKED: concurrent claimers never wait
// for each other and never get the same row (a row locked by one claim is skipped by the others,
// and a row whose claim committed is no longer claimable when re-checked).
import { randomBytes, timingSafeEqual } from "node:crypto";
import { sql, type Transaction } from "kysely";
import type { Database, Executor } from "../database.js";
import { DomainError } from "../platform/errors.js";
import type { SessionRow } from "./tables.js";

export const DEFAULT_LEASE_SECONDS = 60;
export const MIN_LEASE_SECONDS = 5;
export const MAX_LEASE_SECONDS = 3600;

export const newLeaseToken = (): string => randomBytes(24).toString("base64url");

/** Locks the next claimable session, or returns undefined when none is waiting. */
export async function lockNextClaimable(trx: Transaction<Database>, orgId?: string): Promise<SessionRow | undefined> {
  let q = trx
    .selectFrom("sessions")
    .selectAll()
    .where("status", "<>", "idle")
    .where((eb) => eb.or([eb("status", "=", "pending"), eb("lease_expires_at", "<", sql<Date>`clock_timestamp()`)]));
  if (orgId !== undefined) q = q.where("org_id", "=", orgId);
  return q.orderBy("pending_since").orderBy("id").limit(1).forUpdate().skipLocked().executeTakeFirst();
}

/**
 * Extends a lease held with `token` (on a session of `orgId`, when given); returns the new
 * expiry, or undefined when not held.
 */
export async function renewLease(
  db: Executor,
  sessionId: string,
  token: string,
  seconds: number,
  orgId?: string,
): Promise<Date | undefined> {
  let q = db
    .updateTable("sessions")
    .set({ lease_expires_at: sql`clock_timestamp() + make_interval(secs => ${seconds}::double precision)` })
    .where("id", "=", sessionId)
    .where("status", "=", "running")
    .where("lease_token", "=", token);
  if (orgId !== undefined) q = q.where("org_id", "=", orgId);
  const row = await q.returning("lease_expires_at").executeTakeFirst();
  return row?.lease_expires_at ?? undefined;
}

/** Compares a lease token in constant time: its timing must not tell how much of a guess was right. */
function sameSecret(stored: string, given: string): boolean {
  const a = Buffer.from(stored);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The lease is held while the session runs under this token. A lease that expired but was not
 * claimed again still works: nobody else has taken the session over.
 */
export function requireLease(row: SessionRow, token: string): void {
  if (row.status !== "running" || row.lease_token === null || !sameSecret(row.lease_token, token)) {
    throw new DomainError(
      "failed_precondition",
      "leaseToken: this lease is no longer held (the run finished or was interrupted, or the lease expired and another runner claimed the session)",
    );
  }
}
