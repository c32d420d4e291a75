// The service modules as the binary knows them (services/modules.ts): which module serves which
// gRPC services, and which of those the edge may route. Deployment checks compare envoy.yaml and
// the Kubernetes manifests with this, never with a list of their own.
import { MODULE_NAMES } from "../../services/platform/config.js";
import { isPublic, untimedRpcs } from "../../services/platform/module.js";
import { ALL_MODULES } from "../../services/modules.js";

export interface ModuleFacts {
  readonly name: string;
  readonly publicServices: readonly string[];
  readonly internalServices: readonly string[];
  /** "<service>/<method>" of the public calls that last until the client leaves (no route timeout). */
  readonly untimedRpcs: readonly string[];
}

export function serviceModules(): ModuleFacts[] {
  return ALL_MODULES.map((m) => ({
    name: m.name,
    publicServices: m.services.filter(isPublic).map((s) => s.service.typeName),
    internalServices: m.services.filter((s) => !isPublic(s)).map((s) => s.service.typeName),
    untimedRpcs: [...untimedRpcs(m.services.filter(isPublic))],
  }));
}

/** Every value SERVICES accepts, "all" included. */
export const SERVICES_VALUES: readonly string[] = ["all", ...MODULE_NAMES];
