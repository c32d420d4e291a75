// The demo runner (DEMO_RUNNER, on by default with the embedded database): a runner in the
// server's own process that answers every pending session with demoAnswer, so that on
// `npm start` a posted message goes pending, running, idle and gets a reply that says it comes
// from the demo runner. It is a client like any runner: it calls SessionRunnerService on the
// internal gRPC port with a service-account token of its own (scope sessions.runner), made at
// start and revoked at stop; an account a crashed process left is revoked at the next start.
import type { Kysely } from "kysely";
import type { Database } from "../../database.js";
import {
  createServiceAccount,
  listServiceAccounts,
  revokeServiceAccount,
} from "../../organization/service-accounts.js";
import type { Logger } from "../../platform/logger.js";
import type { Worker } from "../../platform/module.js";
import { demoAnswer } from "./answers.js";
import { runSessions } from "./run-loop.js";
import { runnerClient } from "./runner-client.js";

export const DEMO_RUNNER_ACCOUNT = "demo runner";

export async function startDemoRunner(options: {
  db: Kysely<Database>;
  internalGrpcUrl: string;
  logger: Logger;
}): Promise<Worker> {
  const { db, logger } = options;
  for (const a of await listServiceAccounts(db))
    if (a.name === DEMO_RUNNER_ACCOUNT && a.revoked_at === null) await revokeServiceAccount(db, a.id);
  const { account, token } = await createServiceAccount(db, {
    name: DEMO_RUNNER_ACCOUNT,
    scopes: ["sessions.runner"],
    orgId: null,
  });
  const client = runnerClient(options.internalGrpcUrl, token);
  const stop = new AbortController();
  const loop = runSessions({
    client,
    runnerId: "demo-runner",
    answer: demoAnswer,
    logger: logger.child({ component: "demo-runner" }),
    signal: stop.signal,
  });
  logger.info("the demo runner answers sessions (DEMO_RUNNER=false turns it off)");
  return {
    async stop() {
      stop.abort();
      await loop;
      await revokeServiceAccount(db, account.id);
    },
  };
}
