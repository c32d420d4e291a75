// An agent runner's loop over SessionRunnerService (the internal gRPC port, a workload
// credential with the sessions.runner scope): claim the session that has waited longest, keep
// its lease renewed while answering, append the answer, finish the run; when nothing waits, look
// again every idleMs. What answers is pluggable (answers.ts): the demo runner's canned reply, or
// a command run per message. A run that was interrupted or deleted meanwhile is left as it is:
// the lease calls are refused (FAILED_PRECONDITION, NOT_FOUND), and the loop moves on.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type {
  ClaimSessionResponse,
  NewMessageSchema,
  SessionRunnerService,
} from "../../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import type { Logger } from "../../platform/logger.js";

export type RunnerClient = Client<typeof SessionRunnerService>;

/** Produces the messages that answer a claimed run's pending user messages. */
export type Answer = (
  claim: ClaimSessionResponse,
  signal: AbortSignal,
) => Promise<MessageInitShape<typeof NewMessageSchema>[]>;

export interface RunLoopOptions {
  client: RunnerClient;
  runnerId: string;
  /** Only sessions of this organization (an organization-bound credential needs none). */
  orgId?: string;
  answer: Answer;
  logger: Logger;
  /** How long to wait when nothing is pending. Default 1 000. */
  idleMs?: number;
  /** Lease length asked for. Default 60. */
  leaseSeconds?: number;
  signal: AbortSignal;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });

/** The run is no longer this runner's: interrupted, claimed by another, or deleted. */
const runGone = (err: unknown) =>
  err instanceof ConnectError && (err.code === Code.FailedPrecondition || err.code === Code.NotFound);

/** One claimed run, start to finish. */
async function run(options: RunLoopOptions, claim: ClaimSessionResponse): Promise<void> {
  const { client, logger } = options;
  const sessionId = claim.session!.sessionId;
  const lease = { sessionId, leaseToken: claim.leaseToken };
  const leaseSeconds = options.leaseSeconds ?? 60;
  const log = logger.child({ sessionId, runnerId: options.runnerId });
  // Renewed at half its length, so a slow answer never loses it; the renewal stops with the run.
  const running = new AbortController();
  const stop = () => running.abort();
  options.signal.addEventListener("abort", stop, { once: true });
  const renewing = (async () => {
    while (!running.signal.aborted) {
      await sleep((leaseSeconds * 1000) / 2, running.signal);
      if (running.signal.aborted) return;
      try {
        await client.renewLease({ ...lease, leaseSeconds });
      } catch (err) {
        if (runGone(err)) log.info("the run ended elsewhere (interrupted or deleted)");
        else log.warn({ err }, "renewing the lease failed");
        running.abort();
      }
    }
  })();
  try {
    const messages = await options.answer(claim, running.signal);
    if (running.signal.aborted) return;
    if (messages.length > 0) await client.appendMessages({ ...lease, messages });
    await client.finishRun(lease);
    log.info({ answered: claim.pendingMessages.length }, "run finished");
  } catch (err) {
    if (runGone(err)) log.info("the run ended elsewhere (interrupted or deleted)");
    else throw err;
  } finally {
    running.abort();
    options.signal.removeEventListener("abort", stop);
    await renewing;
  }
}

/** Runs until `signal` aborts. Errors of one run are logged, and the loop goes on. */
export async function runSessions(options: RunLoopOptions): Promise<void> {
  const { client, logger, signal } = options;
  const idleMs = options.idleMs ?? 1_000;
  while (!signal.aborted) {
    try {
      const claim = await client.claimSession(
        { runnerId: options.runnerId, orgId: options.orgId, leaseSeconds: options.leaseSeconds ?? 60 },
        { signal },
      );
      if (claim.session === undefined) {
        await sleep(idleMs, signal);
        continue;
      }
      await run(options, claim);
    } catch (err) {
      if (signal.aborted) return;
      logger.warn({ err, runnerId: options.runnerId }, "runner: a call failed; trying again");
      await sleep(idleMs, signal);
    }
  }
}
