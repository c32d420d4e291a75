import { CreditLimitService, OrganizationService } from "../../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { API_KEY_OR_JWT, internal, type ClosableAuthenticator } from "../platform/auth.js";
import { AuthFailureLimiter } from "../platform/auth-failures.js";
import type { Database as DatabaseHandle } from "../platform/db.js";
import { settingsOf, type Platform, type ServiceModule } from "../platform/module.js";
import type { Database } from "../database.js";
import { watchCredentialChanges } from "./credential-changes.js";
import { createAuthenticator } from "./credentials.js";
import { writeOrganizationDemo } from "./demo.js";
import { createCreditLimitHandlers, createCreditLimitService } from "./credit-limits/handlers.js";
import { createCreditLimitReadHandlers } from "./credit-limits/read-handlers.js";
import { createOrganizationService } from "./handlers.js";
import { loadOrganizationConfig, type OrganizationConfig } from "./webhooks/config.js";
import { startWebhookDispatcher } from "./webhooks/dispatcher.js";
import { createWebhookHandlers } from "./webhooks/handlers.js";

export const organizationModule: ServiceModule<OrganizationConfig> = {
  name: "organization",
  dependsOn: [],
  provides: { authenticator: startAuthenticator },
  settings: loadOrganizationConfig,
  services: [
    { service: OrganizationService, policy: API_KEY_OR_JWT },
    { service: CreditLimitService, policy: internal({ GetCreditBalance: "organization.credits" }) },
  ],
  routes: (platform) => (router) => {
    const { webhooks } = settingsOf(platform.config, organizationModule);
    router.service(OrganizationService, {
      ...createOrganizationService({ db: platform.db, cursors: platform.cursors }),
      ...createCreditLimitHandlers({ db: platform.db }),
      ...createWebhookHandlers({ db: platform.db, cursors: platform.cursors, config: webhooks }),
      ...createCreditLimitReadHandlers({ db: platform.db, cursors: platform.cursors }),
    });
    router.service(CreditLimitService, createCreditLimitService({ db: platform.db }));
  },
  // Sends the webhook outbox's deliveries.
  start: async (platform) =>
    startWebhookDispatcher({
      db: platform.db,
      config: settingsOf(platform.config, organizationModule).webhooks,
      databaseUrl: platform.databaseUrl,
      logger: platform.logger,
    }),
  demo: writeOrganizationDemo,
};

/**
 * The credential check of API keys, service-account tokens and JWTs. Every listener needs it, so
 * a process serving only other modules starts it too.
 */
function startAuthenticator(platform: Platform, database: DatabaseHandle<Database>): ClosableAuthenticator {
  const { config, logger } = platform;
  // Credential changes (revocations, role changes) reach this process's cache through Postgres
  // notifications; the embedded database has no other process to hear from.
  const watch =
    database.kind === "postgres"
      ? watchCredentialChanges({ url: database.url, onChange: (subject) => authenticator.forget(subject), logger })
      : undefined;
  const authenticator = createAuthenticator(platform.db, {
    jwt: { secret: config.jwtSecret, jwksUrl: config.jwksUrl, issuer: config.jwtIssuer, audience: config.jwtAudience },
    failures: new AuthFailureLimiter(platform.kv),
    changesWatched: () => watch?.watching() ?? false,
  });
  return {
    authenticate: (token, clientAddress) => authenticator.authenticate(token, clientAddress),
    close: async () => {
      await watch?.close();
    },
  };
}
