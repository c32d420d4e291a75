// Where hook notifications go (the targets) and the notify command's limits. Read from a JSON
// file (default ~/.config/agentplane/hooks.json, or $XDG_CONFIG_HOME/agentplane/hooks.json;
// --config FILE or AGENTPLANE_HOOK_CONFIG name another) and then environment variables, which
// win over the file. A missing file is fine (defaults); an invalid one is an error naming the field.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export interface WebhookConfig {
  url: string;
  /** When set, requests carry X-Agentplane-Timestamp and X-Agentplane-Signature (see webhook.ts). */
  secret?: string;
}

/** Usage reporting: one `hook` telemetry event per execution (docs/telemetry.md), best effort. */
export interface UsageConfig {
  /** Base URL of a Connect endpoint serving agentplane.analytics.v1.TelemetryService (usage.ts). */
  url: string;
  apiKey: string;
  orgId: string;
  userId: string;
  userEmail?: string;
  /** terminal-ui (default), web or non-interactive-cli. */
  client: string;
}

export interface HookConfig {
  /** Where the config came from (undefined: no file, defaults and environment only). */
  source: string | undefined;
  /** The notify command finishes within this many ms of its start; below the hook timeout. */
  deadlineMs: number;
  logFile: string;
  desktop: boolean;
  bell: boolean;
  webhook: WebhookConfig | undefined;
  usage: UsageConfig | undefined;
}

export class HookConfigError extends Error {}

type Env = Record<string, string | undefined>;

/** 2.5 s: under the 3 s, the shortest hook timeout in the spec's examples, with room to start. */
export const DEFAULT_DEADLINE_MS = 2500;
export const MAX_DEADLINE_MS = 60_000;
const CLIENTS = ["terminal-ui", "web", "non-interactive-cli"];

export function defaultConfigPath(env: Env, home = homedir()): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME !== "" ? env.XDG_CONFIG_HOME : join(home, ".config");
  return join(base, "agentplane", "hooks.json");
}

export function defaultLogFile(env: Env, home = homedir()): string {
  const base = env.XDG_STATE_HOME && env.XDG_STATE_HOME !== "" ? env.XDG_STATE_HOME : join(home, ".local", "state");
  return join(base, "agentplane", "hooks.log");
}

function fail(where: string, field: string, problem: string): never {
  throw new HookConfigError(`${where}: ${field}: ${problem}`);
}

function httpUrl(value: unknown, where: string, field: string): string {
  if (typeof value !== "string" || value.trim() === "") fail(where, field, "must be a URL");
  let parsed: URL;
  try {
    parsed = new URL(value.trim());
  } catch {
    fail(where, field, "is not a valid URL");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    fail(where, field, `must use http: or https:, got ${parsed.protocol}`);
  return value.trim();
}

function text(value: unknown, where: string, field: string): string {
  if (typeof value !== "string" || value.trim() === "") fail(where, field, "must be a non-empty string");
  return value.trim();
}

function flag(value: unknown, where: string, field: string): boolean {
  if (typeof value === "boolean") return value;
  if (typeof value === "string") {
    const v = value.trim().toLowerCase();
    if (["1", "true", "yes", "on"].includes(v)) return true;
    if (["0", "false", "no", "off"].includes(v)) return false;
  }
  fail(where, field, "must be true or false");
}

function deadline(value: unknown, where: string, field: string): number {
  const n = typeof value === "string" && /^\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 100 || n > MAX_DEADLINE_MS) {
    fail(where, field, `must be an integer number of milliseconds from 100 to ${MAX_DEADLINE_MS}`);
  }
  return n;
}

function readFileConfig(path: string, explicit: boolean): Record<string, unknown> | undefined {
  let raw: string;
  try {
    raw = readFileSync(path, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // The default file is optional; a file the user named must exist.
    if (code === "ENOENT" && !explicit) return undefined;
    throw new HookConfigError(`${path}: cannot read (${code ?? (err as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    throw new HookConfigError(`${path}: not valid JSON: ${(err as Error).message}`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json))
    throw new HookConfigError(`${path}: must hold a JSON object`);
  return json as Record<string, unknown>;
}

function section(file: Record<string, unknown>, name: string, where: string): Record<string, unknown> | undefined {
  const value = file[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "object" || Array.isArray(value)) fail(where, name, "must be an object");
  return value as Record<string, unknown>;
}

const KNOWN_KEYS = ["deadlineMs", "logFile", "desktop", "bell", "webhook", "usage"];

/**
 * The effective configuration. `configPath` is --config; env is process.env. Environment
 * variables: AGENTPLANE_HOOK_CONFIG, AGENTPLANE_HOOK_DEADLINE_MS, AGENTPLANE_HOOK_LOG,
 * AGENTPLANE_HOOK_DESKTOP, AGENTPLANE_HOOK_BELL, AGENTPLANE_HOOK_WEBHOOK_URL,
 * AGENTPLANE_HOOK_WEBHOOK_SECRET, AGENTPLANE_USAGE_URL, AGENTPLANE_API_KEY, AGENTPLANE_ORG_ID,
 * AGENTPLANE_USER_ID, AGENTPLANE_USER_EMAIL, AGENTPLANE_CLIENT.
 */
export function loadHookConfig(env: Env, configPath?: string, home = homedir()): HookConfig {
  const named = configPath ?? (env.AGENTPLANE_HOOK_CONFIG || undefined);
  const path = named ?? defaultConfigPath(env, home);
  const file = readFileConfig(path, named !== undefined);
  const f = file ?? {};
  const where = path;
  for (const key of Object.keys(f)) {
    if (!KNOWN_KEYS.includes(key)) fail(where, key, `unknown setting (known: ${KNOWN_KEYS.join(", ")})`);
  }
  const config: HookConfig = {
    source: file ? path : undefined,
    deadlineMs: f.deadlineMs === undefined ? DEFAULT_DEADLINE_MS : deadline(f.deadlineMs, where, "deadlineMs"),
    logFile: f.logFile === undefined ? defaultLogFile(env, home) : text(f.logFile, where, "logFile"),
    // Desktop notifications are the point of installing the hook: on unless turned off.
    desktop: f.desktop === undefined ? true : flag(f.desktop, where, "desktop"),
    bell: f.bell === undefined ? false : flag(f.bell, where, "bell"),
    webhook: undefined,
    usage: undefined,
  };

  const webhook = section(f, "webhook", where);
  if (webhook) {
    config.webhook = { url: httpUrl(webhook.url, where, "webhook.url") };
    if (webhook.secret !== undefined) config.webhook.secret = text(webhook.secret, where, "webhook.secret");
  }
  const usage = section(f, "usage", where);
  const usageFields: Record<string, unknown> = { ...usage };

  // The environment wins over the file.
  const envName = "environment";
  if (env.AGENTPLANE_HOOK_DEADLINE_MS)
    config.deadlineMs = deadline(env.AGENTPLANE_HOOK_DEADLINE_MS, envName, "AGENTPLANE_HOOK_DEADLINE_MS");
  if (env.AGENTPLANE_HOOK_LOG) config.logFile = env.AGENTPLANE_HOOK_LOG;
  if (env.AGENTPLANE_HOOK_DESKTOP)
    config.desktop = flag(env.AGENTPLANE_HOOK_DESKTOP, envName, "AGENTPLANE_HOOK_DESKTOP");
  if (env.AGENTPLANE_HOOK_BELL) config.bell = flag(env.AGENTPLANE_HOOK_BELL, envName, "AGENTPLANE_HOOK_BELL");
  if (env.AGENTPLANE_HOOK_WEBHOOK_URL) {
    config.webhook = {
      ...config.webhook,
      url: httpUrl(env.AGENTPLANE_HOOK_WEBHOOK_URL, envName, "AGENTPLANE_HOOK_WEBHOOK_URL"),
    };
  }
  if (env.AGENTPLANE_HOOK_WEBHOOK_SECRET) {
    if (!config.webhook) fail(envName, "AGENTPLANE_HOOK_WEBHOOK_SECRET", "is set but no webhook URL is configured");
    config.webhook.secret = env.AGENTPLANE_HOOK_WEBHOOK_SECRET;
  }
  const envUsage: Array<[string, string]> = [
    ["AGENTPLANE_USAGE_URL", "url"],
    ["AGENTPLANE_API_KEY", "apiKey"],
    ["AGENTPLANE_ORG_ID", "orgId"],
    ["AGENTPLANE_USER_ID", "userId"],
    ["AGENTPLANE_USER_EMAIL", "userEmail"],
    ["AGENTPLANE_CLIENT", "client"],
  ];
  let usageFromEnv = false;
  for (const [variable, field] of envUsage) {
    const value = env[variable];
    if (value) {
      usageFields[field] = value;
      usageFromEnv = true;
    }
  }
  // Usage reporting is on only when a URL and a key are configured; then it needs the rest too.
  if (usageFields.url !== undefined || usageFields.apiKey !== undefined) {
    const w = usage && !usageFromEnv ? where : `${where} / environment`;
    const client = usageFields.client === undefined ? "terminal-ui" : text(usageFields.client, w, "usage.client");
    if (!CLIENTS.includes(client)) fail(w, "usage.client", `must be one of ${CLIENTS.join(", ")}`);
    config.usage = {
      url: httpUrl(usageFields.url, w, "usage.url (AGENTPLANE_USAGE_URL)"),
      apiKey: text(usageFields.apiKey, w, "usage.apiKey (AGENTPLANE_API_KEY)"),
      orgId: text(usageFields.orgId, w, "usage.orgId (AGENTPLANE_ORG_ID)"),
      userId: text(usageFields.userId, w, "usage.userId (AGENTPLANE_USER_ID)"),
      client,
    };
    if (usageFields.userEmail !== undefined) config.usage.userEmail = text(usageFields.userEmail, w, "usage.userEmail");
  }
  return config;
}
