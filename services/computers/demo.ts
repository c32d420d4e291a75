// Demo computers in every status (provisioning, active, error), for both providers, with the
// step history each would have. The active ones were set up before the demo period (the demo's
// sessions run on them), the others recently; the sandboxes clone the repositories the readiness
// demo evaluates. Skips a name the organization already has, so it can run twice.
import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { Database } from "../database.js";
import { demoPeriodStart } from "../demo-story.js";
import type { DemoOptions } from "../platform/module.js";
import { findComputerByName, insertComputer } from "./queries.js";
import { planSteps } from "./steps.js";
import type { ComputerStatus, ProviderType } from "./tables.js";

interface DemoComputer {
  name: string;
  provider: ProviderType;
  status: ComputerStatus;
  repos: string[];
  autoInstallDeps: boolean;
  /** Index of the step that failed (status error). */
  failedStep?: number;
  failure?: string;
  registered?: boolean;
  /** When it was created: days before the demo period, or minutes ago. */
  created: { daysBeforePeriod: number } | { minutesAgo: number };
}

const DEMO: DemoComputer[] = [
  {
    name: "ada-workstation",
    provider: "byom",
    status: "active",
    repos: [],
    autoInstallDeps: false,
    registered: true,
    created: { daysBeforePeriod: 12 },
  },
  {
    name: "build-box-eu",
    provider: "byom",
    status: "provisioning",
    repos: [],
    autoInstallDeps: false,
    created: { minutesAgo: 25 },
  },
  {
    name: "web-sandbox",
    provider: "e2b",
    status: "active",
    repos: ["https://github.com/demo-co/web-platform.git", "https://github.com/demo-co/data-pipelines.git"],
    autoInstallDeps: true,
    created: { daysBeforePeriod: 5 },
  },
  {
    name: "payments-sandbox",
    provider: "e2b",
    status: "error",
    repos: ["https://github.com/demo-co/payments-api.git"],
    autoInstallDeps: true,
    failedStep: 1,
    failure:
      "git clone of https://github.com/demo-co/payments-api.git failed with exit code 128: fatal: could not read Username for 'https://github.com': terminal prompts disabled",
    created: { minutesAgo: 180 },
  },
];

/** The demo computers the demo's sessions run on. */
export const DEMO_WORKSTATION = "ada-workstation";
export const DEMO_SANDBOX = "web-sandbox";

export async function writeComputersDemo(db: Kysely<Database>, orgId: string, options: DemoOptions): Promise<void> {
  const minute = 60_000;
  const nowMs = Date.now();
  const periodStart = demoPeriodStart(options, nowMs);
  for (const demo of DEMO) {
    if (await findComputerByName(db, orgId, demo.name)) continue;
    await db.transaction().execute(async (trx) => {
      const hostId = demo.provider === "byom" ? randomUUID() : null;
      const { computer, steps } = await insertComputer(
        trx,
        orgId,
        {
          name: demo.name,
          remoteUser: demo.provider === "e2b" ? "user" : "ada",
          provider: demo.provider,
          hostId,
          repos: demo.repos,
          autoInstallDeps: demo.autoInstallDeps,
        },
        planSteps(demo.provider, demo.repos, demo.autoInstallDeps),
      );
      const created = new Date(
        "minutesAgo" in demo.created
          ? nowMs - demo.created.minutesAgo * minute
          : periodStart - demo.created.daysBeforePeriod * 86_400_000 + 10 * 60 * minute,
      );
      await trx
        .updateTable("computers")
        .set({
          created_at: created,
          updated_at: created,
          status: demo.status,
          ...(demo.registered
            ? {
                hostname: `${demo.name}.local`,
                relay_client_url: `wss://relay.demo.agentplane.dev/client/${hostId}`,
                relay_agent_url: `wss://relay.demo.agentplane.dev/agent/${hostId}`,
              }
            : {}),
          ...(demo.provider === "e2b"
            ? { sandbox_id: `demo${computer.id.slice(0, 8)}`, sandbox_domain: "e2b.app" }
            : {}),
        })
        .where("id", "=", computer.id)
        .execute();
      for (const step of steps) {
        const started = new Date(created.getTime() + (step.position + 1) * minute);
        const finished = new Date(started.getTime() + 40_000);
        const failedAt = demo.failedStep;
        let change: {
          status: "pending" | "running" | "succeeded" | "failed" | "skipped";
          started_at: Date | null;
          completed_at: Date | null;
          error: string | null;
          attempts: number;
        };
        if (demo.status === "provisioning")
          change = { status: "running", started_at: created, completed_at: null, error: null, attempts: 0 };
        else if (failedAt === undefined || step.position < failedAt)
          change = { status: "succeeded", started_at: started, completed_at: finished, error: null, attempts: 1 };
        else if (step.position === failedAt)
          change = {
            status: "failed",
            started_at: started,
            completed_at: finished,
            error: demo.failure ?? "failed",
            attempts: 1,
          };
        else change = { status: "skipped", started_at: null, completed_at: null, error: null, attempts: 0 };
        await trx.updateTable("computer_provisioning_steps").set(change).where("id", "=", step.id).execute();
      }
    });
  }
}
