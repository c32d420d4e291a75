// The module registry: every named module of the one binary. SERVICES=all expands to all of
// them plus the REST edge (platform/config.ts); Kubernetes runs one module per Deployment. The
// order modules start and write demo data in comes from their dependsOn (module-registry.ts).
import type { ServiceModule } from "./platform/module.js";
import { createModuleRegistry } from "./platform/module-registry.js";
import { analyticsModule } from "./analytics/module.js";
import { computersModule } from "./computers/module.js";
import { organizationModule } from "./organization/module.js";
import { readinessModule } from "./readiness/module.js";
import { sessionsModule } from "./sessions/module.js";
import { webModule } from "./web/module.js";

/**
 * Checked when this file loads, at start: a dependency cycle or a missing provider stops the
 * process. The listing order only breaks ties between modules whose dependencies are met.
 */
export const MODULES = createModuleRegistry([
  organizationModule,
  sessionsModule,
  computersModule,
  readinessModule,
  analyticsModule,
  webModule,
]);

/** Every module, whether running here or not (the edge routes all public services), dependencies first. */
export const ALL_MODULES: readonly ServiceModule[] = MODULES.modules;

/** Every scope the internal services' policies name: what a service account may be given. */
export const SCOPES: readonly string[] = [
  ...new Set(
    ALL_MODULES.flatMap((m) =>
      m.services.flatMap((s) => (s.policy.kind === "internal" ? Object.values(s.policy.scopes) : [])),
    ),
  ),
].sort();
