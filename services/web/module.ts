// The web module: what the REST port serves to browsers (docs/web.md). It holds no data and needs
// no credential; it reads the dashboard's build once at start.
import { WebService } from "../../gen/agentplane/web/v1/web_pb.js";
import { PUBLIC_OPEN } from "../platform/auth.js";
import { settingsOf, type ServiceModule } from "../platform/module.js";
import { loadApiReferenceFiles } from "./api-reference.js";
import { loadWebConfig, type WebConfig } from "./config.js";
import { readStaticFiles } from "./files.js";
import { createWebService } from "./handlers.js";

export const webModule: ServiceModule<WebConfig> = {
  name: "web",
  dependsOn: [],
  settings: loadWebConfig,
  services: [{ service: WebService, policy: PUBLIC_OPEN }],
  routes: (platform) => {
    const { dashboardDir } = settingsOf(platform.config, webModule);
    const dashboard = readStaticFiles(dashboardDir);
    const web = createWebService({ dashboard, apiReference: loadApiReferenceFiles(dashboard) });
    return (router) => router.service(WebService, web);
  },
};
