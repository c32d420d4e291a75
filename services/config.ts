// The whole configuration, read from the environment and validated once at start: the platform's
// own settings (platform/config.ts) and each module's section (ServiceModule.settings: the E2B
// settings are the computers module's). Every module's section is read whichever modules this
// process runs, so a bad variable stops every process alike.
import { loadPlatformConfig, type Config, type Env, type ModuleSettings } from "./platform/config.js";
import { ALL_MODULES } from "./modules.js";

export function loadConfig(env: Env = process.env): Config {
  const platform = loadPlatformConfig(env);
  const modules: Record<string, unknown> = {};
  for (const module of ALL_MODULES) if (module.settings) modules[module.name] = module.settings(env);
  return Object.freeze({ ...platform, modules: Object.freeze(modules) as ModuleSettings });
}
