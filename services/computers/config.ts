// The computers module's section of the configuration: the E2B sandbox API that provisions e2b
// computers. Read and validated with the rest of the configuration at start (services/config.ts),
// in every process, so a bad E2B_* variable stops each one alike.
import { ConfigError, urlSetting, type Env } from "../platform/config.js";

export interface ComputersConfig {
  /** The E2B sandbox API that provisions e2b computers; undefined when E2B_API_KEY is unset. */
  readonly e2b: E2bConfig | undefined;
}

export interface E2bConfig {
  /** E2B_API_URL, default https://api.e2b.app: the sandbox control-plane API. */
  readonly apiUrl: string;
  /** E2B_API_KEY: sent as X-API-Key. */
  readonly apiKey: string;
  /** E2B_SANDBOX_URL: the shared sandbox host serving envd; default https://sandbox.<sandbox domain>. */
  readonly sandboxUrl: string | undefined;
  /** E2B_TEMPLATE, default "base": the template new sandboxes start from. */
  readonly template: string;
}

export function loadComputersConfig(env: Env): ComputersConfig {
  return { e2b: e2bConfig(env) };
}

/** E2B is configured by its API key; a URL or template without a key is a mistake, not "off". */
function e2bConfig(env: Env): E2bConfig | undefined {
  const apiKey = env.E2B_API_KEY || undefined;
  const apiUrl = urlSetting(env, "E2B_API_URL", ["http:", "https:"]);
  const sandboxUrl = urlSetting(env, "E2B_SANDBOX_URL", ["http:", "https:"]);
  if (apiKey === undefined) {
    for (const name of ["E2B_API_URL", "E2B_SANDBOX_URL", "E2B_TEMPLATE"]) {
      if (env[name]) throw new ConfigError(name, "is set but E2B_API_KEY is not");
    }
    return undefined;
  }
  const template = env.E2B_TEMPLATE || "base";
  if (!/^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}$/.test(template)) {
    throw new ConfigError("E2B_TEMPLATE", `is not a template name or ID: "${template.slice(0, 40)}"`);
  }
  return {
    apiUrl: (apiUrl ?? "https://api.e2b.app").replace(/\/+$/, ""),
    apiKey,
    sandboxUrl: sandboxUrl?.replace(/\/+$/, ""),
    template,
  };
}
