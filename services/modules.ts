// The module registry: every named module of the one binary. SERVICES=all expands to all of
// them plus the REST edge (platform/config.ts); Kubernetes runs one module per Deployment.
import type { ModuleName } from "./platform/config.js";
import type { ServiceModule } from "./platform/module.js";
import { analyticsModule } from "./analytics/module.js";
import { computersModule } from "./computers/module.js";
import { organizationModule } from "./organization/module.js";
import { readinessModule } from "./readiness/module.js";
import { sessionsModule } from "./sessions/module.js";

// Organization comes first: other modules' demo writers use the users it creates.
export const SERVICE_MODULES: Readonly<Record<Exclude<ModuleName, "edge">, ServiceModule>> = {
  organization: organizationModule,
  sessions: sessionsModule,
  computers: computersModule,
  readiness: readinessModule,
  analytics: analyticsModule,
};

export function modulesFor(names: readonly ModuleName[]): ServiceModule[] {
  return names.filter((n): n is Exclude<ModuleName, "edge"> => n !== "edge").map((n) => SERVICE_MODULES[n]);
}

/** Every module, whether running here or not: the edge routes all public services. */
export const ALL_MODULES: readonly ServiceModule[] = Object.values(SERVICE_MODULES);

/** Every scope the internal services' policies name: what a service account may be given. */
export const SCOPES: readonly string[] = [
  ...new Set(ALL_MODULES.flatMap((m) => m.services.flatMap((s) => (s.policy.kind === "internal" ? Object.values(s.policy.scopes) : [])))),
].sort();
