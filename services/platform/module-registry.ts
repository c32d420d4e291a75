// The module registry's rules (after Loki's module manager): modules start, and write their demo
// data, after the modules they depend on, in an order sorted from their dependsOn, never from the
// order they were listed in; each provision (module.ts) has exactly one provider. A broken
// registry (a name given twice, an unknown dependency, a cycle, a provision with no provider or
// two) is an error at start.
import type { ModuleName } from "./config.js";
import { PROVISION_KINDS, type ProvisionKind, type Provisions, type ServiceModule } from "./module.js";

export interface ModuleRegistry {
  /** Every module, each after the modules it depends on. */
  readonly modules: readonly ServiceModule[];
  /** The modules SERVICES names, in the same order; "edge" is the platform's, not a module. */
  running(names: readonly ModuleName[]): ServiceModule[];
  /** The one implementation of `kind`, from the module that provides it, running here or not. */
  provider<K extends ProvisionKind>(kind: K): Provisions[K];
}

export function createModuleRegistry(modules: readonly ServiceModule[]): ModuleRegistry {
  const ordered = dependencyOrder(modules);
  const providers = new Map<ProvisionKind, ServiceModule>();
  for (const kind of PROVISION_KINDS) {
    const by = modules.filter((m) => m.provides?.[kind] !== undefined);
    if (by.length !== 1) {
      const who =
        by.length === 0 ? "no module provides" : `${by.length} modules (${by.map((m) => m.name).join(", ")}) provide`;
      throw new Error(`module registry: ${who} ${kind}; exactly one must`);
    }
    providers.set(kind, by[0]!);
  }
  return {
    modules: ordered,
    running(names) {
      for (const name of names) {
        if (name === "edge" || ordered.some((m) => m.name === name)) continue;
        throw new Error(`module registry: no module named "${name}"`);
      }
      return ordered.filter((m) => names.includes(m.name));
    },
    provider(kind) {
      // Present: checked above for every kind.
      return providers.get(kind)!.provides![kind]!;
    },
  };
}

/**
 * Each module after everything it depends on (Kahn's algorithm). Among modules whose dependencies
 * are all placed, the one listed first goes next, so the order is the same on every run.
 */
export function dependencyOrder(modules: readonly ServiceModule[]): ServiceModule[] {
  const byName = new Map<string, ServiceModule>();
  for (const m of modules) {
    if (byName.has(m.name)) throw new Error(`module registry: "${m.name}" is registered twice`);
    byName.set(m.name, m);
  }
  for (const m of modules) {
    for (const d of m.dependsOn) {
      if (!byName.has(d)) throw new Error(`module registry: "${m.name}" depends on "${d}", which is not registered`);
    }
  }
  const ordered: ServiceModule[] = [];
  const placed = new Set<string>();
  while (ordered.length < modules.length) {
    const next = modules.find((m) => !placed.has(m.name) && m.dependsOn.every((d) => placed.has(d)));
    if (next === undefined) {
      const cycle = cycleAmong(modules, placed, byName).join(" → ");
      throw new Error(`module registry: modules depend on each other in a cycle: ${cycle}`);
    }
    ordered.push(next);
    placed.add(next.name);
  }
  return ordered;
}

/**
 * A cycle among the modules not yet placed: each of them has a dependency not yet placed (else
 * it would have been), so following those from any one must come back round to a name seen.
 */
function cycleAmong(
  modules: readonly ServiceModule[],
  placed: ReadonlySet<string>,
  byName: ReadonlyMap<string, ServiceModule>,
): string[] {
  const path: string[] = [];
  let current = modules.find((m) => !placed.has(m.name))!;
  while (!path.includes(current.name)) {
    path.push(current.name);
    current = byName.get(current.dependsOn.find((d) => !placed.has(d))!)!;
  }
  return [...path.slice(path.indexOf(current.name)), current.name];
}
