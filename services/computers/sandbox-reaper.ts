// Stops the E2B sandboxes of deleted e2b computers. Deleting a computer records it in
// computer_sandbox_reaps (queries.ts deleteComputer, migration 0023); the provisioning worker
// then kills every sandbox E2B lists with the computer's metadata (and the one the computer had
// recorded), and looks once more `againAfterMs` after the deletion, because a worker that was
// creating the sandbox when the computer was deleted may finish after the first look. A failed
// look is retried with backoff; the row goes after the second look.
// Without it a deleted computer's sandbox ran until its timeout and was then paused, which E2B
// keeps.
import { sql, type Kysely, type Selectable } from "kysely";
import type { Database } from "../database.js";
import type { Logger } from "../platform/logger.js";
import type { E2bClient } from "./e2b-client.js";
import { NOT_CONFIGURED, sandboxMetadata } from "./provisioner.js";
import type { ComputerSandboxReapsTable } from "./tables.js";

export interface ReaperDeps {
  db: Kysely<Database>;
  e2b: E2bClient | undefined;
  logger: Logger;
  /** When the second look comes, after the deletion. */
  againAfterMs: number;
}

/** Default of againAfterMs: longer than a create-sandbox call can take (60 s) and a lease (30 s). */
export const REAP_AGAIN_AFTER_MS = 5 * 60_000;

/** Reaps handled per claim, and how long a claim holds before another worker may take the reap. */
const CLAIM_LIMIT = 5;
const CLAIM_HOLD = "2 minutes";

/** Backoff after the n-th failed look: 30 s doubling, at most an hour. */
const backoffMs = (attempts: number) => Math.min(3_600_000, 30_000 * 2 ** Math.min(attempts - 1, 7));

type Reap = Selectable<ComputerSandboxReapsTable>;

/**
 * Claims the reaps that are due (their next look pushed past the claim's hold, so another worker
 * skips them) and looks at each. Returns how many it claimed.
 */
export async function reapDueSandboxes(deps: ReaperDeps, signal: AbortSignal): Promise<number> {
  const claimed = await sql<Reap>`
    update computer_sandbox_reaps
    set next_attempt_at = now() + ${CLAIM_HOLD}::interval, attempts = attempts + 1
    where computer_id in (
      select computer_id from computer_sandbox_reaps
      where next_attempt_at <= now()
      order by next_attempt_at
      limit ${CLAIM_LIMIT}
      for update skip locked
    )
    returning *`.execute(deps.db);
  for (const reap of claimed.rows) {
    if (signal.aborted) break;
    await look(deps, reap, signal);
  }
  return claimed.rows.length;
}

async function look(deps: ReaperDeps, reap: Reap, signal: AbortSignal): Promise<void> {
  const log = deps.logger.child({ component: "sandbox-reaper", computerId: reap.computer_id, orgId: reap.org_id });
  let stopped = 0;
  try {
    if (!deps.e2b) throw new Error(NOT_CONFIGURED);
    const metadata = sandboxMetadata({ id: reap.computer_id, org_id: reap.org_id });
    const found = await deps.e2b.findSandboxes(metadata, signal, ["running", "paused"]);
    for (const sandboxId of new Set([...(reap.sandbox_id ? [reap.sandbox_id] : []), ...found]))
      if (await deps.e2b.killSandbox(sandboxId, signal)) stopped++;
  } catch (err) {
    if (signal.aborted) return; // the claim lapses; another look comes after the hold
    const message = (err as Error).message.slice(0, 1000);
    // Without E2B configured this deployment made no sandbox to stop, unless it had E2B before:
    // the row waits for the configuration, quietly.
    if (deps.e2b)
      log.warn(
        { attempts: reap.attempts, err: message },
        "could not stop a deleted computer's sandboxes; retrying later",
      );
    await deps.db
      .updateTable("computer_sandbox_reaps")
      .set({ next_attempt_at: new Date(Date.now() + backoffMs(reap.attempts)), last_error: message })
      .where("computer_id", "=", reap.computer_id)
      .execute();
    return;
  }
  if (stopped > 0) log.info({ stopped }, "stopped a deleted computer's sandboxes");
  const again = new Date(new Date(reap.created_at).getTime() + deps.againAfterMs);
  if (again.getTime() > Date.now()) {
    await deps.db
      .updateTable("computer_sandbox_reaps")
      .set({ next_attempt_at: again, last_error: null })
      .where("computer_id", "=", reap.computer_id)
      .execute();
    return;
  }
  await deps.db.deleteFrom("computer_sandbox_reaps").where("computer_id", "=", reap.computer_id).execute();
}
