// The registry's order comes from dependsOn, not from the listing; a broken registry stops start
// with an error naming what is wrong.
import { describe, expect, it } from "vitest";
import { ALL_MODULES, MODULES } from "../modules.js";
import { createModuleRegistry, dependencyOrder } from "./module-registry.js";
import type { Provisions, ServiceModule, ServiceModuleName } from "./module.js";

const authenticator: Provisions["authenticator"] = () => ({
  authenticate: async () => undefined,
  close: async () => {},
});
const PROVIDES_ALL: Partial<Provisions> = { authenticator, telemetrySink: () => ({ record: async () => {} }) };

function module(name: string, dependsOn: string[], provides?: Partial<Provisions>): ServiceModule {
  return {
    name: name as ServiceModuleName,
    dependsOn: dependsOn as ServiceModuleName[],
    provides,
    services: [],
    routes: () => () => {},
  };
}
const names = (modules: readonly ServiceModule[]) => modules.map((m) => m.name);

describe("dependencyOrder", () => {
  it("puts every module after the modules it depends on, whatever the listing order", () => {
    const listed = [
      module("sessions", ["organization", "computers"]),
      module("computers", ["organization"]),
      module("organization", []),
    ];
    expect(names(dependencyOrder(listed))).toEqual(["organization", "computers", "sessions"]);
  });

  it("breaks ties by the listing order, so every run gives the same order", () => {
    const listed = [
      module("readiness", ["organization"]),
      module("analytics", ["organization"]),
      module("organization", []),
    ];
    expect(names(dependencyOrder(listed))).toEqual(["organization", "readiness", "analytics"]);
  });

  it("refuses a cycle, naming it", () => {
    const listed = [
      module("organization", []),
      module("sessions", ["computers"]),
      module("computers", ["analytics"]),
      module("analytics", ["sessions"]),
    ];
    expect(() => dependencyOrder(listed)).toThrow(
      "module registry: modules depend on each other in a cycle: sessions → computers → analytics → sessions",
    );
    expect(() => dependencyOrder([module("sessions", ["sessions"])])).toThrow("in a cycle: sessions → sessions");
  });

  it("refuses an unknown dependency and a name registered twice", () => {
    expect(() => dependencyOrder([module("sessions", ["billing"])])).toThrow(
      'module registry: "sessions" depends on "billing", which is not registered',
    );
    expect(() => dependencyOrder([module("sessions", []), module("sessions", [])])).toThrow(
      'module registry: "sessions" is registered twice',
    );
  });
});

describe("createModuleRegistry", () => {
  it("finds each provision's one provider, whichever modules run", () => {
    const sink = { record: async () => {} };
    const registry = createModuleRegistry([
      module("organization", [], { authenticator }),
      module("analytics", ["organization"], { telemetrySink: () => sink }),
      module("sessions", ["organization"]),
    ]);
    expect(names(registry.running(["sessions"]))).toEqual(["sessions"]);
    expect(registry.provider("telemetrySink")(undefined as never)).toBe(sink);
  });

  it("refuses a provision with no provider or two", () => {
    expect(() => createModuleRegistry([module("organization", [], { authenticator })])).toThrow(
      "module registry: no module provides telemetrySink; exactly one must",
    );
    const twice = [module("organization", [], PROVIDES_ALL), module("analytics", [], PROVIDES_ALL)];
    expect(() => createModuleRegistry(twice)).toThrow(
      "module registry: 2 modules (organization, analytics) provide authenticator; exactly one must",
    );
  });

  it("gives the running modules in dependency order, the edge being no module", () => {
    const registry = createModuleRegistry([
      module("sessions", ["organization"]),
      module("organization", [], PROVIDES_ALL),
    ]);
    expect(names(registry.running(["edge", "sessions", "organization"]))).toEqual(["organization", "sessions"]);
    expect(() => registry.running(["computers"])).toThrow('module registry: no module named "computers"');
  });
});

describe("the registry of this binary", () => {
  it("starts and writes demo data with organization first: the others' rows belong to an organization", () => {
    expect(names(ALL_MODULES)).toEqual(["organization", "sessions", "computers", "readiness", "analytics", "web"]);
    // The web module holds no rows: it serves the dashboard's files and depends on nothing.
    for (const m of ALL_MODULES)
      if (m.name !== "organization" && m.name !== "web") expect(m.dependsOn, m.name).toContain("organization");
    expect(names(MODULES.running(["analytics", "organization"]))).toEqual(["organization", "analytics"]);
  });
});
