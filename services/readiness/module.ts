import { ReadinessService, ReportSubmissionService } from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import { API_KEY_ONLY, internal } from "../platform/auth.js";
import type { ServiceModule } from "../platform/module.js";
import { writeReadinessDemo } from "./demo.js";
import { createReadinessService, createReportSubmissionService } from "./handlers.js";

export const readinessModule: ServiceModule = {
  name: "readiness",
  // Its rows belong to an organization.
  dependsOn: ["organization"],
  services: [
    { service: ReadinessService, policy: API_KEY_ONLY },
    {
      service: ReportSubmissionService,
      policy: internal({ SubmitReport: "readiness.submit", ListRepositories: "readiness.submit" }),
    },
  ],
  routes: (platform) => (router) => {
    router.service(ReadinessService, createReadinessService({ db: platform.db }));
    router.service(ReportSubmissionService, createReportSubmissionService({ db: platform.db }));
  },
  demo: writeReadinessDemo,
};
