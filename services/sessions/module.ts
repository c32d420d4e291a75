import { SessionRunnerService, SessionService } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { API_KEY_OR_JWT, internal } from "../platform/auth.js";
import { MESSAGE_RECURSION_LIMIT } from "../platform/json-nesting.js";
import type { ServiceModule } from "../platform/module.js";
import { writeSessionsDemo } from "./demo.js";
import { createSessionService } from "./handlers.js";
import { startIdempotencyKeyPruner } from "./idempotency.js";
import { createSessionWakeups } from "./event-wakeups.js";
import { createSessionRunnerService } from "./runner-handlers.js";

// Tag metadata is free-form JSON (google.protobuf.Struct): a request whose body Envoy (or the
// TypeScript edge) accepts may nest it deeper than protobuf's default limit of 100 messages. It
// must reach the handler, which refuses it with a 400 naming the field (settings.ts), rather than
// fail in the decoder (an INTERNAL error, a 500 through the edge). Responses never nest that deep.
const DECODE_FREE_FORM_JSON = {
  binaryOptions: { recursionLimit: MESSAGE_RECURSION_LIMIT },
  jsonOptions: { recursionLimit: MESSAGE_RECURSION_LIMIT },
};

export const sessionsModule: ServiceModule = {
  name: "sessions",
  // Its rows belong to an organization, and its demo sessions are the organization's users'.
  dependsOn: ["organization"],
  services: [
    { service: SessionService, policy: API_KEY_OR_JWT, untimed: ["StreamSessionEvents"] },
    {
      service: SessionRunnerService,
      policy: internal({
        CreateSession: "sessions.runner",
        ClaimSession: "sessions.runner",
        RenewLease: "sessions.runner",
        AppendMessages: "sessions.runner",
        FinishRun: "sessions.runner",
      }),
    },
  ],
  routes: (platform) => {
    // One per process, shared by the routers: the event streams' wake-ups.
    const wakeups = createSessionWakeups({ url: platform.databaseUrl, logger: platform.logger });
    return (router) => {
      router.service(
        SessionService,
        createSessionService({
          db: platform.db,
          cursors: platform.cursors,
          telemetry: platform.telemetry,
          wakeups,
          draining: platform.draining,
        }),
        DECODE_FREE_FORM_JSON,
      );
      router.service(
        SessionRunnerService,
        createSessionRunnerService({ db: platform.db, telemetry: platform.telemetry }),
        DECODE_FREE_FORM_JSON,
      );
    };
  },
  start: async (platform) => startIdempotencyKeyPruner(platform.db, platform.logger),
  demo: writeSessionsDemo,
};
