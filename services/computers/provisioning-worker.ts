// The provisioning worker: polls Postgres for e2b computers to provision and runs their steps
// (provisioner.ts), and stops the sandboxes of deleted ones (sandbox-reaper.ts). Several workers, in one process or many, share the queue through
// FOR UPDATE SKIP LOCKED claims and leases (provisioning-queries.ts).
import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Database } from "../database.js";
import type { E2bConfig } from "./config.js";
import type { Logger } from "../platform/logger.js";
import type { Worker } from "../platform/module.js";
import { E2bClient } from "./e2b-client.js";
import { claimNextProvisioning } from "./provisioning-queries.js";
import { provisionComputer } from "./provisioner.js";
import { REAP_AGAIN_AFTER_MS, reapDueSandboxes } from "./sandbox-reaper.js";

export interface ProvisioningWorkerOptions {
  db: Kysely<Database>;
  e2b: E2bConfig | undefined;
  logger: Logger;
  /** Default: a random ID per worker. */
  workerId?: string;
  /** How often an idle worker looks for work. Default 1 000 ms. */
  pollIntervalMs?: number;
  /** How long a claim holds without renewal: a dead worker's computers wait this long. Default 30 000 ms. */
  leaseMs?: number;
  /** Computers provisioned at the same time. Default 2. */
  concurrency?: number;
  /** When a deleted computer's sandboxes are looked for the second time (sandbox-reaper.ts). */
  reapAgainAfterMs?: number;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

export function startProvisioningWorker(options: ProvisioningWorkerOptions): Worker {
  const workerId = options.workerId ?? `provisioner-${randomUUID()}`;
  const pollIntervalMs = options.pollIntervalMs ?? 1_000;
  const leaseMs = options.leaseMs ?? 30_000;
  const log = options.logger.child({ component: "provisioning-worker", worker: workerId });
  const deps = {
    db: options.db,
    e2b: options.e2b ? new E2bClient(options.e2b) : undefined,
    template: options.e2b?.template ?? "base",
    logger: options.logger,
    workerId,
    leaseMs,
  };
  if (!deps.e2b) log.info("E2B is not configured (E2B_API_KEY): e2b computers will fail their first provisioning step");
  const stopping = new AbortController();

  const slot = async () => {
    while (!stopping.signal.aborted) {
      try {
        const computer = await claimNextProvisioning(options.db, workerId, leaseMs);
        if (!computer) {
          await sleep(pollIntervalMs, stopping.signal);
          continue;
        }
        await provisionComputer(deps, computer, stopping.signal);
      } catch (err) {
        if (stopping.signal.aborted) break;
        // The database went away or answered something unexpected: the claimed computer's lease
        // lapses and it is picked up again later.
        log.error({ err }, "provisioning failed; retrying later");
        await sleep(pollIntervalMs, stopping.signal);
      }
    }
  };
  const slots = Array.from({ length: Math.max(1, options.concurrency ?? 2) }, () => slot());

  // Deleted computers' sandboxes are stopped beside the provisioning (sandbox-reaper.ts).
  const reaperDeps = { ...deps, againAfterMs: options.reapAgainAfterMs ?? REAP_AGAIN_AFTER_MS };
  const reaping = async () => {
    while (!stopping.signal.aborted) {
      try {
        if ((await reapDueSandboxes(reaperDeps, stopping.signal)) === 0) await sleep(pollIntervalMs, stopping.signal);
      } catch (err) {
        if (stopping.signal.aborted) break;
        log.error({ err }, "stopping deleted computers' sandboxes failed; retrying later");
        await sleep(pollIntervalMs, stopping.signal);
      }
    }
  };
  slots.push(reaping());

  return {
    async stop() {
      stopping.abort(new Error("worker stopping"));
      await Promise.all(slots);
    },
  };
}
