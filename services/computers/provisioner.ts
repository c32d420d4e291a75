// Runs the provisioning steps of one claimed e2b computer, in order, recording each step before
// it calls E2B and after it finished. Steps already succeeded are never run again; a step a dead
// worker left `running` is run again, and every step is written to be safe to repeat (the
// sandbox is found again by its metadata, a finished clone is detected).
import type { Kysely } from "kysely";
import type { Database } from "../database.js";
import type { Logger } from "../platform/logger.js";
import type { E2bClient, SandboxAccess } from "./e2b-client.js";
import { E2bError } from "./e2b-envd.js";
import { listSteps, type ComputerRow, type StepRow } from "./queries.js";
import {
  completeProvisioning,
  failProvisioning,
  finishStep,
  releaseLease,
  renewLease,
  startStep,
  type Lease,
} from "./provisioning-queries.js";
import { cloneCommand, installCommand } from "./step-commands.js";

export interface ProvisionerDeps {
  db: Kysely<Database>;
  /** Undefined when E2B is not configured: the first step then fails and says so. */
  e2b: E2bClient | undefined;
  template: string;
  logger: Logger;
  workerId: string;
  leaseMs: number;
}

/** Sandbox lifetime (seconds) before E2B pauses it; a paused sandbox resumes on connect. */
export const SANDBOX_TIMEOUT_S = 3600;
const CLONE_TIMEOUT_MS = 10 * 60_000;
const INSTALL_TIMEOUT_MS = 20 * 60_000;
const ERROR_MAX = 1000;

export const NOT_CONFIGURED =
  "E2B is not configured: set E2B_API_KEY (and E2B_API_URL for a self-hosted E2B) to provision e2b computers";

/** Metadata put on the sandbox so a retried create-sandbox step finds it instead of making a second one. */
export const sandboxMetadata = (computer: Pick<ComputerRow, "id" | "org_id">) => ({
  agentplaneComputerId: computer.id,
  agentplaneOrgId: computer.org_id,
});

/** The end of a failed command's output: git and package managers say why on their last lines. */
function failureDetail(stderr: string, stdout: string): string {
  const text = (stderr.trim() || stdout.trim()).split("\n").slice(-5).join("\n");
  return text.length > 500 ? `…${text.slice(-500)}` : text;
}

/**
 * Provisions the computer until it is active, in error, the lease is lost or `signal` aborts
 * (the worker stops). Database failures propagate: the lease then lapses and another attempt
 * resumes from the recorded steps.
 */
export async function provisionComputer(
  deps: ProvisionerDeps,
  claimed: ComputerRow,
  signal: AbortSignal,
): Promise<void> {
  const lease: Lease = { computerId: claimed.id, workerId: deps.workerId, leaseMs: deps.leaseMs };
  const log = deps.logger.child({ computerId: claimed.id, worker: deps.workerId });
  // Aborted when the worker stops or the lease turns out to belong to someone else.
  const local = new AbortController();
  const onStop = () => local.abort(signal.reason);
  signal.addEventListener("abort", onStop, { once: true });
  const heartbeat = setInterval(
    () => {
      renewLease(deps.db, lease).then(
        (ours) => {
          if (!ours) {
            log.warn("lost the provisioning lease; stopping");
            local.abort(new Error("lease lost"));
          }
        },
        (err) => log.warn({ err }, "could not renew the provisioning lease"),
      );
    },
    Math.max(50, Math.floor(deps.leaseMs / 3)),
  );

  let computer = claimed;
  let sandbox: SandboxAccess | undefined;
  const access = async (): Promise<SandboxAccess> => {
    if (sandbox) return sandbox;
    if (!computer.sandbox_id) throw new E2bError("no sandbox was recorded for this computer");
    sandbox = await deps.e2b!.getSandbox(computer.sandbox_id, local.signal);
    return sandbox;
  };

  const runStep = async (
    step: StepRow,
    attempt: number,
  ): Promise<{ sandbox?: { id: string; domain: string | null } }> => {
    if (!deps.e2b) throw new E2bError(NOT_CONFIGURED);
    const e2b = deps.e2b;
    switch (step.kind) {
      case "create_sandbox": {
        // A previous attempt may have created the sandbox and died before recording it.
        const existing = attempt > 1 ? await e2b.findSandboxes(sandboxMetadata(computer), local.signal) : [];
        sandbox = existing[0]
          ? await e2b.getSandbox(existing[0], local.signal)
          : await e2b.createSandbox(
              {
                templateID: deps.template,
                timeout: SANDBOX_TIMEOUT_S,
                autoPause: true,
                metadata: sandboxMetadata(computer),
              },
              local.signal,
            );
        return { sandbox: { id: sandbox.sandboxId, domain: sandbox.domain } };
      }
      case "clone_repo":
      case "install_deps": {
        const command =
          step.kind === "clone_repo"
            ? cloneCommand(step.repo_url!, step.repo_dir!, computer.remote_user)
            : installCommand(step.repo_dir!, computer.remote_user);
        const what =
          step.kind === "clone_repo" ? `git clone of ${step.repo_url}` : `dependency install in ${step.repo_dir}`;
        const result = await e2b.run(
          await access(),
          command,
          local.signal,
          step.kind === "clone_repo" ? CLONE_TIMEOUT_MS : INSTALL_TIMEOUT_MS,
        );
        if (result.error) throw new E2bError(`${what} could not run: ${result.error}`);
        if (result.exitCode !== 0)
          throw new E2bError(
            `${what} failed with exit code ${result.exitCode}: ${failureDetail(result.stderr, result.stdout)}`,
          );
        return {};
      }
      default:
        throw new E2bError(`step kind ${step.kind} does not belong to an e2b computer`);
    }
  };

  try {
    for (const step of await listSteps(deps.db, computer.id)) {
      if (step.status === "succeeded" || step.status === "skipped") continue;
      const attempt = await startStep(deps.db, lease, step.id);
      if (attempt === undefined) return;
      log.info({ step: step.name, attempt }, "provisioning step started");
      let outcome: Awaited<ReturnType<typeof runStep>>;
      try {
        outcome = await runStep(step, attempt);
      } catch (err) {
        if (local.signal.aborted) return;
        const message = (err instanceof E2bError ? err.message : `unexpected failure: ${(err as Error).message}`).slice(
          0,
          ERROR_MAX,
        );
        log.warn({ step: step.name, error: message }, "provisioning step failed");
        await failProvisioning(deps.db, lease, step.id, message);
        return;
      }
      if (!(await finishStep(deps.db, lease, step.id, outcome.sandbox))) return;
      if (outcome.sandbox)
        computer = { ...computer, sandbox_id: outcome.sandbox.id, sandbox_domain: outcome.sandbox.domain };
      log.info({ step: step.name }, "provisioning step succeeded");
    }
    if (await completeProvisioning(deps.db, lease)) log.info("computer provisioned");
  } finally {
    clearInterval(heartbeat);
    signal.removeEventListener("abort", onStop);
    // A graceful stop hands the computer back now rather than after the lease lapses.
    if (signal.aborted)
      await releaseLease(deps.db, lease).catch((err) => log.warn({ err }, "could not release the provisioning lease"));
  }
}
