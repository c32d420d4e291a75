import { ComputerService, HostService } from "../../gen/agentplane/computers/v1alpha1/computers_pb.js";
import { API_KEY_OR_JWT, internal } from "../platform/auth.js";
import { settingsOf, type ServiceModule } from "../platform/module.js";
import { loadComputersConfig, type ComputersConfig } from "./config.js";
import { writeComputersDemo } from "./demo.js";
import { createComputerService, createHostService } from "./handlers.js";
import { createComputerLifecycleHandlers } from "./lifecycle-handlers.js";
import { startProvisioningWorker } from "./provisioning-worker.js";

export const computersModule: ServiceModule<ComputersConfig> = {
  name: "computers",
  // Its rows belong to an organization.
  dependsOn: ["organization"],
  settings: loadComputersConfig,
  services: [
    { service: ComputerService, policy: API_KEY_OR_JWT },
    { service: HostService, policy: internal({ RegisterHost: "computers.host" }) },
  ],
  routes: (platform) => (router) => {
    router.service(ComputerService, {
      ...createComputerService({ db: platform.db }),
      ...createComputerLifecycleHandlers({ db: platform.db, cursors: platform.cursors }),
    });
    router.service(HostService, createHostService({ db: platform.db }));
  },
  // Provisions e2b computers (byom computers wait for their host's RegisterHost instead).
  start: async (platform) => {
    const { e2b } = settingsOf(platform.config, computersModule);
    return startProvisioningWorker({ db: platform.db, e2b, logger: platform.logger });
  },
  demo: writeComputersDemo,
};
