import { ComputerService, HostService } from "../../gen/agentplane/computers/v1alpha1/computers_pb.js";
import { API_KEY_OR_JWT, internal } from "../platform/auth.js";
import type { ServiceModule } from "../platform/module.js";
import { writeComputersDemo } from "./demo.js";
import { createComputerService, createHostService } from "./handlers.js";
import { startProvisioningWorker } from "./provisioning-worker.js";

export const computersModule: ServiceModule = {
  name: "computers",
  services: [
    { service: ComputerService, policy: API_KEY_OR_JWT },
    { service: HostService, policy: internal({ RegisterHost: "computers.host" }) },
  ],
  routes: (platform) => (router) => {
    router.service(ComputerService, createComputerService({ db: platform.db }));
    router.service(HostService, createHostService({ db: platform.db }));
  },
  // Provisions e2b computers (byom computers wait for their host's RegisterHost instead).
  start: async (platform) => startProvisioningWorker({ db: platform.db, e2b: platform.config.e2b, logger: platform.logger }),
  demo: writeComputersDemo,
};
