// The organization module's settings: how webhooks are delivered.
import { type Env, flag, positiveMs } from "../../platform/config.js";

export interface WebhookConfig {
  /**
   * WEBHOOK_ALLOW_PRIVATE_TARGETS (default false): lets endpoints be http and point at loopback,
   * private, link-local and metadata addresses. For local development and tests only: on a
   * server, it lets anyone who may add a webhook make this service call inside its network.
   */
  readonly allowPrivateTargets: boolean;
  /**
   * WEBHOOK_RETRY_BASE_MS (default 5 000): the first retry's delay; later ones are the same
   * multiples of it (dispatcher.ts), 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h by default.
   */
  readonly retryBaseMs: number;
}

export interface OrganizationConfig {
  readonly webhooks: WebhookConfig;
}

export function loadOrganizationConfig(env: Env): OrganizationConfig {
  return {
    webhooks: {
      allowPrivateTargets: flag(env, "WEBHOOK_ALLOW_PRIVATE_TARGETS", false),
      retryBaseMs: positiveMs(env, "WEBHOOK_RETRY_BASE_MS", 5_000),
    },
  };
}
