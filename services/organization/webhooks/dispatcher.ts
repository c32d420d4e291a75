// The webhook dispatcher (a worker of the organization module): sends the outbox's due
// deliveries, and records each attempt. It is woken by the notification the outbox's triggers
// send at commit (on any replica); between notifications it sleeps until the earliest pending
// delivery comes due (retries come due by the clock), at most IDLE_MAX_MS in case a
// notification was lost. On the embedded database, which has no LISTEN, it polls every POLL_MS
// instead. Several dispatchers (replicas) share
// the outbox without sending a delivery twice at once (queries.ts, claimDueDeliveries); a
// delivery whose dispatcher stopped mid-send is sent again after its lease: at least once.
import type { Executor } from "../../database.js";
import type { Logger } from "../../platform/logger.js";
import type { Worker } from "../../platform/module.js";
import { type ChannelListener, listenToChannel } from "../../platform/pg-listen.js";
import type { WebhookConfig } from "./config.js";
import { claimDueDeliveries, msUntilNextDue, recordAttempt, type ClaimedDelivery } from "./queries.js";
import { SEND_TIMEOUT_MS, sendWebhook } from "./send.js";

export const WEBHOOKS_CHANNEL = "agentplane_webhooks";
const POLL_MS = 1_000;
/** The longest sleep while listening: bounds the delay of a delivery whose notification was lost. */
const IDLE_MAX_MS = 30_000;
/** Deliveries claimed (and sent side by side) at once. */
const BATCH = 16;
/** Longer than an attempt can take: a claimed delivery is not claimed again before it. */
const LEASE_MS = SEND_TIMEOUT_MS * 3;
/**
 * The delay before each retry, in multiples of WEBHOOK_RETRY_BASE_MS (5 s by default: 5 s,
 * 5 min, 30 min, 2 h, 5 h, 10 h, 10 h). Its length is the retry budget: the first attempt and
 * these 7 retries, then the delivery is marked failed.
 */
export const RETRY_MULTIPLES = [1, 60, 360, 1_440, 3_600, 7_200, 7_200] as const;
export const MAX_ATTEMPTS = RETRY_MULTIPLES.length + 1;

/** When to try again after `attempts` failed ones, or undefined when the budget is spent. */
export function retryAt(attempts: number, baseMs: number, now = Date.now()): Date | undefined {
  const multiple = RETRY_MULTIPLES[attempts - 1];
  if (multiple === undefined) return undefined;
  // Up to 10% later, so that deliveries that failed together do not all come back together.
  return new Date(now + multiple * baseMs * (1 + Math.random() * 0.1));
}

export interface DispatcherOptions {
  db: Executor;
  config: WebhookConfig;
  /** The Postgres URL to LISTEN on; undefined: poll only (the embedded database). */
  databaseUrl: string | undefined;
  logger: Logger;
}

export function startWebhookDispatcher(options: DispatcherOptions): Worker {
  const log = options.logger.child({ component: "webhook-dispatcher" });
  let stopped = false;
  let wake: (() => void) | undefined;
  let rerun = false;
  const poke = () => {
    rerun = true;
    wake?.();
  };
  const listener: ChannelListener | undefined =
    options.databaseUrl === undefined
      ? undefined
      : listenToChannel({
          url: options.databaseUrl,
          channel: WEBHOOKS_CHANNEL,
          name: "agentplane-webhooks",
          onPayload: poke,
          onGap: poke,
          logger: options.logger,
        });

  const attempt = async (d: ClaimedDelivery) => {
    const outcome = await sendWebhook(
      { url: d.url, secret: d.secret, id: d.id, body: d.body },
      { allowPrivateTargets: options.config.allowPrivateTargets },
    );
    const next = outcome.error === undefined ? undefined : retryAt(d.attempts, options.config.retryBaseMs);
    await recordAttempt(options.db, d.id, { httpStatus: outcome.status, error: outcome.error, retryAt: next });
    if (outcome.error !== undefined)
      log.info(
        { deliveryId: d.id, orgId: d.org_id, attempt: d.attempts, status: outcome.status, error: outcome.error },
        next === undefined ? "webhook delivery failed for good" : "webhook delivery failed; will retry",
      );
  };

  const loop = (async () => {
    while (!stopped) {
      rerun = false;
      let claimed: ClaimedDelivery[] = [];
      try {
        claimed = await claimDueDeliveries(options.db, BATCH, LEASE_MS);
        await Promise.all(claimed.map(attempt));
      } catch (err) {
        log.warn({ err }, "webhook dispatch failed; retrying");
      }
      // A full batch: more may be due at once.
      if (stopped || claimed.length === BATCH || rerun) continue;
      const sleepMs =
        listener === undefined
          ? POLL_MS
          : Math.min(IDLE_MAX_MS, (await msUntilNextDue(options.db).catch(() => POLL_MS)) ?? IDLE_MAX_MS);
      if (stopped || rerun) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, sleepMs);
        function done() {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        }
        wake = done;
      });
    }
  })();

  return {
    async stop() {
      stopped = true;
      wake?.();
      await loop;
      await listener?.close();
    },
  };
}
