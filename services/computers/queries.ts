// Repository functions of the computers area used by the API handlers. Each takes an Executor
// (db or transaction) and is scoped by organization, except the host lookup: a host agent knows
// only its hostId, which is unique across organizations. Those that lock a row, or write what
// must change together with the computer, take a Transaction: the compiler refuses them outside one.
import { newId } from "../platform/ids.js";
import { sql, type Selectable, type Transaction } from "kysely";
import type { Database, Executor } from "../database.js";
import type { PlannedStep } from "./steps.js";
import type { ComputerProvisioningStepsTable, ComputersTable } from "./tables.js";
import type { NewComputerInput } from "./validation.js";

export type ComputerRow = Selectable<ComputersTable>;
export type StepRow = Selectable<ComputerProvisioningStepsTable>;

/** The computer and its planned steps: two statements, one transaction (never a computer without its steps). */
export async function insertComputer(
  trx: Transaction<Database>,
  orgId: string,
  input: NewComputerInput,
  steps: readonly PlannedStep[],
): Promise<{ computer: ComputerRow; steps: StepRow[] }> {
  const now = new Date();
  const computer = await trx
    .insertInto("computers")
    .values({
      id: newId(),
      org_id: orgId,
      name: input.name,
      provider_type: input.provider,
      host_id: input.hostId,
      hostname: null,
      status: "provisioning",
      relay_client_url: null,
      relay_agent_url: null,
      remote_user: input.remoteUser,
      repos: JSON.stringify(input.repos),
      auto_install_deps: input.autoInstallDeps,
      sandbox_id: null,
      sandbox_domain: null,
      lease_owner: null,
      lease_expires_at: null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  const rows = await trx
    .insertInto("computer_provisioning_steps")
    .values(
      steps.map((s) => ({
        id: newId(),
        computer_id: computer.id,
        org_id: orgId,
        position: s.position,
        kind: s.kind,
        name: s.name,
        repo_url: s.repoUrl,
        repo_dir: s.repoDir,
        // A byom computer is waiting for its host from the moment it exists.
        status: s.kind === "register_host" ? ("running" as const) : ("pending" as const),
        error: null,
        started_at: s.kind === "register_host" ? now : null,
        completed_at: null,
        install_session_id: null,
      })),
    )
    .returningAll()
    .execute();
  return { computer, steps: rows.sort((a, b) => a.position - b.position) };
}

/** The organization's computer with this ID, as a query a caller may add a row lock to. */
const oneComputer = (db: Executor, orgId: string, id: string) =>
  db.selectFrom("computers").selectAll().where("org_id", "=", orgId).where("id", "=", id);

export async function findComputer(db: Executor, orgId: string, id: string): Promise<ComputerRow | undefined> {
  return oneComputer(db, orgId, id).executeTakeFirst();
}

/** Like findComputer, and holds the row lock until the transaction ends. */
export async function lockComputer(
  trx: Transaction<Database>,
  orgId: string,
  id: string,
): Promise<ComputerRow | undefined> {
  return oneComputer(trx, orgId, id).forUpdate().executeTakeFirst();
}

/**
 * Like findComputer, and keeps the computer from being deleted until the transaction ends, so
 * what names it is stored while it exists. FOR KEY SHARE: it waits only for a transaction holding
 * the row FOR UPDATE (DeleteComputer, UpdateComputer, RegisterHost), never for the provisioning
 * worker's plain updates, and holders of it do not wait for each other.
 */
export async function shareComputer(
  trx: Transaction<Database>,
  orgId: string,
  id: string,
): Promise<ComputerRow | undefined> {
  return oneComputer(trx, orgId, id).forKeyShare().executeTakeFirst();
}

/** The computer is gone with its steps (the foreign key cascades). */
/**
 * Deletes the computer; an e2b computer's sandboxes are then stopped by the provisioning worker
 * (sandbox-reaper.ts), from the row recorded here in the same transaction.
 */
export async function deleteComputer(trx: Transaction<Database>, orgId: string, computerId: string): Promise<void> {
  const deleted = await trx
    .deleteFrom("computers")
    .where("org_id", "=", orgId)
    .where("id", "=", computerId)
    .returning(["provider_type", "sandbox_id"])
    .executeTakeFirst();
  if (deleted?.provider_type !== "e2b") return;
  await trx
    .insertInto("computer_sandbox_reaps")
    .values({ computer_id: computerId, org_id: orgId, sandbox_id: deleted.sandbox_id })
    .onConflict((oc) => oc.column("computer_id").doNothing())
    .execute();
}

/** Keyset position of the computers list: oldest first by (created_at, id). */
export interface ComputerPosition {
  createdAt: string;
  id: string;
}

export async function listComputersPage(
  db: Executor,
  orgId: string,
  limit: number,
  after?: ComputerPosition,
): Promise<ComputerRow[]> {
  let q = db.selectFrom("computers").selectAll().where("org_id", "=", orgId);
  // Tuple comparison keeps the keyset exact even when timestamps collide.
  if (after) q = q.where(sql<boolean>`(created_at, id) > (${new Date(after.createdAt)}::timestamptz, ${after.id})`);
  return q.orderBy("created_at").orderBy("id").limit(limit).execute();
}

export async function findComputerByName(db: Executor, orgId: string, name: string): Promise<ComputerRow | undefined> {
  return db.selectFrom("computers").selectAll().where("org_id", "=", orgId).where("name", "=", name).executeTakeFirst();
}

/** The computer of a host, locked until the transaction ends. hostId must be a validated UUID (the column is uuid). */
export async function lockComputerByHostId(
  trx: Transaction<Database>,
  hostId: string,
): Promise<ComputerRow | undefined> {
  return trx.selectFrom("computers").selectAll().where("host_id", "=", hostId).forUpdate().executeTakeFirst();
}

export async function listSteps(db: Executor, computerId: string): Promise<StepRow[]> {
  return db
    .selectFrom("computer_provisioning_steps")
    .selectAll()
    .where("computer_id", "=", computerId)
    .orderBy("position")
    .execute();
}

/** The steps of several computers (a listed page), each computer's in order. */
export async function listStepsOfComputers(
  db: Executor,
  computerIds: readonly string[],
): Promise<Map<string, StepRow[]>> {
  const byComputer = new Map<string, StepRow[]>(computerIds.map((id) => [id, []]));
  if (computerIds.length === 0) return byComputer;
  const rows = await db
    .selectFrom("computer_provisioning_steps")
    .selectAll()
    .where("computer_id", "in", computerIds)
    .orderBy("computer_id")
    .orderBy("position")
    .execute();
  for (const row of rows) byComputer.get(row.computer_id)?.push(row);
  return byComputer;
}

export type ComputerUpdate = Partial<
  Pick<ComputerRow, "name" | "host_id" | "remote_user" | "hostname" | "status" | "relay_client_url" | "relay_agent_url">
>;

export async function updateComputer(db: Executor, computerId: string, changes: ComputerUpdate): Promise<ComputerRow> {
  return db
    .updateTable("computers")
    .set({ ...changes, updated_at: new Date() })
    .where("id", "=", computerId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A byom computer moved to another host waits for that host again (with its status, in one transaction). */
export async function restartHostRegistration(trx: Transaction<Database>, computerId: string): Promise<void> {
  await trx
    .updateTable("computer_provisioning_steps")
    .set({ status: "running", error: null, started_at: new Date(), completed_at: null })
    .where("computer_id", "=", computerId)
    .where("kind", "=", "register_host")
    .execute();
}

/** A byom computer's host registered (with its status, in one transaction). */
export async function completeHostRegistration(trx: Transaction<Database>, computerId: string): Promise<void> {
  const now = new Date();
  await trx
    .updateTable("computer_provisioning_steps")
    .set((eb) => ({
      status: "succeeded",
      error: null,
      started_at: eb.fn.coalesce("started_at", eb.val(now)),
      completed_at: now,
    }))
    .where("computer_id", "=", computerId)
    .where("kind", "=", "register_host")
    .where("status", "!=", "succeeded")
    .execute();
}
