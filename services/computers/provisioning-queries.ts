// The provisioning worker's queries. A worker claims one computer with FOR UPDATE SKIP LOCKED
// and a lease (lease_owner, lease_expires_at) that it renews while working; every write it makes
// afterwards checks that it still owns the lease, so a worker that lost it (it stalled, and
// another took over) never overwrites the newer worker's progress. A worker that dies simply
// stops renewing: its lease lapses and the next claim picks the computer up where the steps
// table says it stopped.
import { sql } from "kysely";
import type { Kysely, Transaction, UpdateObject } from "kysely";
import type { Database, Executor } from "../database.js";
import type { ComputerRow } from "./queries.js";

export interface Lease {
  readonly computerId: string;
  readonly workerId: string;
  readonly leaseMs: number;
}

type ComputerChanges = UpdateObject<Database, "computers">;

const expiry = (leaseMs: number) => sql<Date>`now() + ${leaseMs} * interval '1 millisecond'`;

/** Claims the oldest e2b computer still provisioning whose lease is free or lapsed. */
export async function claimNextProvisioning(
  db: Executor,
  workerId: string,
  leaseMs: number,
): Promise<ComputerRow | undefined> {
  const result = await sql<ComputerRow>`
    update computers set lease_owner = ${workerId}, lease_expires_at = ${expiry(leaseMs)}
    where id = (
      select id from computers
      where status = 'provisioning' and provider_type = 'e2b' and (lease_expires_at is null or lease_expires_at < now())
      order by created_at, id
      limit 1
      for update skip locked
    )
    returning *`.execute(db);
  return result.rows[0];
}

/** Writes `changes` while the worker holds the lease; false when another worker owns it now, or it is done. */
async function updateWhileLeased(db: Executor, lease: Lease, changes: ComputerChanges): Promise<boolean> {
  const row = await db
    .updateTable("computers")
    .set(changes)
    .where("id", "=", lease.computerId)
    .where("lease_owner", "=", lease.workerId)
    .where("status", "=", "provisioning")
    .returning("id")
    .executeTakeFirst();
  return row !== undefined;
}

/** Extends the lease; false when another worker owns the computer now (or it is done). */
export async function renewLease(db: Executor, lease: Lease): Promise<boolean> {
  return updateWhileLeased(db, lease, { lease_expires_at: expiry(lease.leaseMs) });
}

/** Gives the computer back at once (graceful stop), so the next worker need not wait out the lease. */
export async function releaseLease(db: Executor, lease: Lease): Promise<void> {
  await db
    .updateTable("computers")
    .set({ lease_owner: null, lease_expires_at: null })
    .where("id", "=", lease.computerId)
    .where("lease_owner", "=", lease.workerId)
    .execute();
}

/** Records that a step starts (before any call to E2B); returns its attempt number, or undefined when the lease is lost. */
export async function startStep(db: Kysely<Database>, lease: Lease, stepId: string): Promise<number | undefined> {
  return db.transaction().execute(async (trx) => {
    if (!(await renewLease(trx, lease))) return undefined;
    const row = await trx
      .updateTable("computer_provisioning_steps")
      .set((eb) => ({
        status: "running",
        error: null,
        started_at: new Date(),
        completed_at: null,
        attempts: eb("attempts", "+", 1),
      }))
      .where("id", "=", stepId)
      .returning("attempts")
      .executeTakeFirstOrThrow();
    return row.attempts;
  });
}

/** Records a finished step (and the sandbox it created, if any); false when the lease is lost. */
export async function finishStep(
  db: Kysely<Database>,
  lease: Lease,
  stepId: string,
  sandbox?: { id: string; domain: string | null },
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    if (!(await renewLease(trx, lease))) return false;
    await trx
      .updateTable("computer_provisioning_steps")
      .set({ status: "succeeded", error: null, completed_at: new Date() })
      .where("id", "=", stepId)
      .execute();
    if (sandbox) {
      await trx
        .updateTable("computers")
        .set({ sandbox_id: sandbox.id, sandbox_domain: sandbox.domain, updated_at: new Date() })
        .where("id", "=", lease.computerId)
        .execute();
    }
    return true;
  });
}

/** The step failed: it carries the error, later steps are skipped, the computer is in error. */
export async function failProvisioning(
  db: Kysely<Database>,
  lease: Lease,
  stepId: string,
  error: string,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    if (!(await renewLease(trx, lease))) return false;
    const now = new Date();
    await trx
      .updateTable("computer_provisioning_steps")
      .set({ status: "failed", error, completed_at: now })
      .where("id", "=", stepId)
      .execute();
    await trx
      .updateTable("computer_provisioning_steps")
      .set({ status: "skipped" })
      .where("computer_id", "=", lease.computerId)
      .where("status", "in", ["pending", "running"])
      .execute();
    await trx
      .updateTable("computers")
      .set({ status: "error", lease_owner: null, lease_expires_at: null, updated_at: now })
      .where("id", "=", lease.computerId)
      .execute();
    return true;
  });
}

export async function completeProvisioning(db: Executor, lease: Lease): Promise<boolean> {
  const changes = { status: "active", lease_owner: null, lease_expires_at: null, updated_at: new Date() } as const;
  return updateWhileLeased(db, lease, changes);
}

/**
 * A computer in error goes back to the queue (RetryComputerProvisioning): its failed and skipped
 * steps are pending again, the succeeded ones stay, and the next claim resumes from the first
 * step not succeeded. The caller holds the computer's row lock and has checked its status.
 */
export async function requeueFailedProvisioning(trx: Transaction<Database>, computerId: string): Promise<ComputerRow> {
  await trx
    .updateTable("computer_provisioning_steps")
    .set({ status: "pending", error: null, started_at: null, completed_at: null })
    .where("computer_id", "=", computerId)
    .where("status", "in", ["failed", "skipped"])
    .execute();
  return trx
    .updateTable("computers")
    .set({ status: "provisioning", lease_owner: null, lease_expires_at: null, updated_at: new Date() })
    .where("id", "=", computerId)
    .returningAll()
    .executeTakeFirstOrThrow();
}
