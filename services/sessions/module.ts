import { SessionRunnerService, SessionService } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { API_KEY_OR_JWT, internal } from "../platform/auth.js";
import type { ServiceModule } from "../platform/module.js";
import { writeSessionsDemo } from "./demo.js";
import { createSessionService } from "./handlers.js";
import { startIdempotencyKeyPruner } from "./pruner.js";
import { createSessionRunnerService } from "./runner-handlers.js";

export const sessionsModule: ServiceModule = {
  name: "sessions",
  services: [
    { service: SessionService, policy: API_KEY_OR_JWT },
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
  routes: (platform) => (router) => {
    router.service(SessionService, createSessionService({ db: platform.db, cursors: platform.cursors, telemetry: platform.telemetry }));
    router.service(SessionRunnerService, createSessionRunnerService({ db: platform.db, telemetry: platform.telemetry }));
  },
  start: async (platform) => startIdempotencyKeyPruner(platform.db, platform.logger),
  demo: writeSessionsDemo,
};
