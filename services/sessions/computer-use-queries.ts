// The sessions that name a computer (sessions.computer_id), for ComputerService.DeleteComputer:
// whether one is running or waiting to run there, and detaching the idle ones. The computers
// module calls these inside its delete transaction; they live here because they write sessions.
import type { Transaction } from "kysely";
import type { Database } from "../database.js";
import type { SessionStatus } from "./tables.js";

/**
 * Locks the organization's sessions that name the computer, in ID order (so two deletes of one
 * computer lock them in the same order), and answers how many are in each status.
 */
export async function lockSessionsOnComputer(
  trx: Transaction<Database>,
  orgId: string,
  computerId: string,
): Promise<Map<SessionStatus, number>> {
  const rows = await trx
    .selectFrom("sessions")
    .select(["id", "status"])
    .where("org_id", "=", orgId)
    .where("computer_id", "=", computerId)
    .orderBy("id")
    .forUpdate()
    .execute();
  const counts = new Map<SessionStatus, number>();
  for (const r of rows) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  return counts;
}

/**
 * The computer is being deleted: its sessions (all idle, checked under their locks) no longer
 * name it. updatedAt stays: it moves only for the changes sessions.proto lists.
 */
export async function detachSessionsFromComputer(
  trx: Transaction<Database>,
  orgId: string,
  computerId: string,
): Promise<void> {
  await trx
    .updateTable("sessions")
    .set({ computer_id: null })
    .where("org_id", "=", orgId)
    .where("computer_id", "=", computerId)
    .execute();
}
