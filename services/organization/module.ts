import { CreditLimitService, OrganizationService } from "../../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { API_KEY_OR_JWT, internal } from "../platform/auth.js";
import type { ServiceModule } from "../platform/module.js";
import { writeOrganizationDemo } from "./demo.js";
import { createCreditLimitHandlers, createCreditLimitService } from "./credit-limits-handlers.js";
import { createOrganizationService } from "./handlers.js";

export const organizationModule: ServiceModule = {
  name: "organization",
  services: [
    { service: OrganizationService, policy: API_KEY_OR_JWT },
    { service: CreditLimitService, policy: internal({ GetCreditBalance: "organization.credits" }) },
  ],
  routes: (platform) => (router) => {
    router.service(OrganizationService, {
      ...createOrganizationService({ db: platform.db, cursors: platform.cursors }),
      ...createCreditLimitHandlers({ db: platform.db }),
    });
    router.service(CreditLimitService, createCreditLimitService({ db: platform.db }));
  },
  demo: writeOrganizationDemo,
};
