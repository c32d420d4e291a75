// `agentplane hook notify|install|uninstall|test` (docs/interface.md §6). main.ts dispatches here before it
// loads the server's commands, so a hook starts in a fraction of the time (hooks must exit
// quickly). `hook notify` always exits 0 and writes nothing to stdout or stderr: everything it
// has to say goes to the hook log.
import { readFile } from "node:fs/promises";
import { realpathSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { DEFAULT_DEADLINE_MS, defaultLogFile, HookConfigError, loadHookConfig, type HookConfig } from "./config.js";
import { findOnPath } from "./desktop.js";
import { DEFAULT_INSTALL_EVENTS, HOOK_EVENTS, isHookEvent, sampleEvent, type HookEventName } from "./events.js";
import { createHookLog, errorMessage } from "./log.js";
import { deliverEvent, notificationTargets, notifyFromStdin } from "./notify.js";
import { installHooks, SettingsError, uninstallHooks, type InstallResult, type UninstallResult } from "./settings.js";
import { writeFileAtomic } from "./write-atomic.js";
import { parseCommandLine, type CommandLine } from "../options.js";
import { createOutput, fail, UsageError, type Output } from "../output.js";

export const HOOK_USAGE = `usage: agentplane hook <command> [options]

commands:
  notify [--config FILE]          the hook itself: reads one event as JSON on stdin and notifies
                                  the configured targets; always exits 0, logs failures
  install [--settings FILE] [--events E1,E2] [--timeout S] [--config FILE]
                                  add the notify hook to an agent settings file (default events:
                                  ${DEFAULT_INSTALL_EVENTS.join(", ")}; timeout 5 s)
  uninstall [--settings FILE] [--events E1,E2]
                                  remove the hooks install added, and nothing else
  test EVENT [--config FILE]      send a sample event (${HOOK_EVENTS.join(", ")}) to the targets

The settings file defaults to $AGENTPLANE_SETTINGS_FILE, else ~/.agentplane/settings.json.
The targets are configured in ~/.config/agentplane/hooks.json (--config, $AGENTPLANE_HOOK_CONFIG)
and AGENTPLANE_HOOK_* environment variables.
`;

const DEFAULT_TIMEOUT_S = 5;
const MAX_TIMEOUT_S = 600;

export async function runHookCommand(argv: string[]): Promise<void> {
  if (argv[0] === "notify") return notify(argv.slice(1));
  const { values, positionals } = parseOrUsage(argv);
  const out = createOutput(values.json === true);
  try {
    const [sub, ...rest] = positionals;
    if (values.help || sub === undefined) {
      if (values.help) return void process.stdout.write(HOOK_USAGE);
      throw new UsageError("hook needs a command: notify, install, uninstall or test (agentplane hook --help)");
    }
    if (sub === "install") return await install(values, rest, out);
    if (sub === "uninstall") return await uninstall(values, rest, out);
    if (sub === "test") return await test(values, rest, out);
    throw new UsageError(`unknown command "hook ${sub}" (agentplane hook --help lists them)`);
  } catch (err) {
    fail(err instanceof HookConfigError || err instanceof SettingsError ? new Error(err.message) : err, out.json);
  }
}

/** The options of `hook install|uninstall|test` (notify ignores what it is given). */
export const HOOK_OPTIONS = ["settings", "events", "timeout", "config"] as const;
type Values = CommandLine<(typeof HOOK_OPTIONS)[number]>["values"];

function parseOrUsage(argv: string[]) {
  try {
    return parseCommandLine(argv, HOOK_OPTIONS);
  } catch (err) {
    fail(err, argv.includes("--json"));
  }
}

// ---- notify ----

async function notify(argv: string[]): Promise<void> {
  // The deadline counts from the process start, so start-up time is part of it.
  const startedAt = performance.timeOrigin;
  let log = createHookLog(defaultLogFile(process.env));
  // Nothing the agent passes may make the hook fail: unknown options are ignored.
  const { values } = parseArgs({
    args: argv,
    strict: false,
    allowPositionals: true,
    options: { config: { type: "string" } },
  });
  let config: HookConfig;
  try {
    config = loadHookConfig(process.env, typeof values.config === "string" ? values.config : undefined);
    log = createHookLog(config.logFile);
  } catch (err) {
    log.write("error", "hook configuration unusable; nothing sent", { error: errorMessage(err) });
    return exitQuietly();
  }
  const deadlineAt = startedAt + config.deadlineMs;
  // A last guard in case something ignores every abort: the process ends shortly after the deadline.
  setTimeout(
    () => {
      log.write("warn", "hook stopped at its deadline");
      exitQuietly();
    },
    Math.max(0, deadlineAt - Date.now()) + 200,
  ).unref();
  try {
    await notifyFromStdin(process.stdin, config, deadlineAt, log);
  } catch (err) {
    log.write("error", "hook failed", { error: errorMessage(err) });
  }
  exitQuietly();
}

function exitQuietly(): never {
  // Explicit: an open socket or a child process must not keep the agent waiting.
  process.exit(0);
}

// ---- install / uninstall ----

function settingsPath(values: Values): string {
  if (typeof values.settings === "string" && values.settings.trim() !== "") return resolve(values.settings.trim());
  const fromEnv = process.env.AGENTPLANE_SETTINGS_FILE;
  if (fromEnv) return resolve(fromEnv);
  return join(homedir(), ".agentplane", "settings.json");
}

function parseEvents(values: Values, fallback: readonly HookEventName[] | undefined): HookEventName[] | undefined {
  if (values.events === undefined) return fallback ? [...fallback] : undefined;
  const names = String(values.events)
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (names.length === 0) throw new UsageError(`--events must list events: ${HOOK_EVENTS.join(", ")}`);
  for (const name of names) {
    if (!isHookEvent(name))
      throw new UsageError(`--events: unknown event "${name}" (known: ${HOOK_EVENTS.join(", ")})`);
  }
  return [...new Set(names)] as HookEventName[];
}

function parseTimeout(values: Values, deadlineMs: number): number {
  if (values.timeout === undefined) {
    return Math.max(DEFAULT_TIMEOUT_S, Math.ceil(deadlineMs / 1000) + 1);
  }
  const raw = String(values.timeout);
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_TIMEOUT_S)
    throw new UsageError(`--timeout must be a whole number of seconds from 1 to ${MAX_TIMEOUT_S}`);
  const seconds = Number(raw);
  // The agent kills a hook at its timeout; notify must be done by then.
  if (seconds * 1000 <= deadlineMs)
    throw new UsageError(
      `--timeout ${seconds} is not above the notify deadline of ${deadlineMs} ms (deadlineMs in the hook configuration)`,
    );
  return seconds;
}

function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/** `agentplane hook notify` when PATH's agentplane is this one, else this node and script by path. */
function notifyCommandLine(configPath: string | undefined): string {
  const script = process.argv[1] ?? "";
  const onPath = findOnPath("agentplane");
  const base =
    onPath && sameFile(onPath, script)
      ? "agentplane"
      : `${shellQuote(process.execPath)} ${shellQuote(realpathSync(script))}`;
  return `${base} hook notify${configPath ? ` --config ${shellQuote(resolve(configPath))}` : ""}`;
}

async function readSettings(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new Error(`cannot read ${file}: ${errorMessage(err)}`);
  }
}

function inFile(file: string, err: unknown): Error {
  return new Error(`${file}: ${err instanceof Error ? err.message : String(err)}`);
}

async function install(values: Values, args: string[], out: Output): Promise<void> {
  if (args.length > 0) throw new UsageError(`hook install takes no arguments, got ${args.join(" ")}`);
  const file = settingsPath(values);
  const events = parseEvents(values, DEFAULT_INSTALL_EVENTS) as HookEventName[];
  const configPath = typeof values.config === "string" ? values.config : undefined;
  const deadlineMs = safeDeadline(configPath);
  const hook = {
    type: "command" as const,
    command: notifyCommandLine(configPath),
    timeout: parseTimeout(values, deadlineMs),
  };
  const before = await readSettings(file);
  let result: InstallResult;
  try {
    result = installHooks(before, events, hook);
  } catch (err) {
    throw inFile(file, err);
  }
  if (result.text !== before) await writeFileAtomic(file, result.text);
  const parts = [
    result.added.length ? `added to ${result.added.join(", ")}` : "",
    result.updated.length ? `updated in ${result.updated.join(", ")}` : "",
    result.unchanged.length ? `already in ${result.unchanged.join(", ")}` : "",
  ].filter((p) => p !== "");
  out.result(
    {
      settings: file,
      command: hook.command,
      timeout: hook.timeout,
      added: result.added,
      updated: result.updated,
      unchanged: result.unchanged,
    },
    `${file}: notify hook ${parts.join("; ")}\ncommand: ${hook.command} (timeout ${hook.timeout} s)`,
  );
}

/** The deadline the installed hook will run with; a broken config falls back to the default. */
function safeDeadline(configPath: string | undefined): number {
  try {
    return loadHookConfig(process.env, configPath).deadlineMs;
  } catch {
    return DEFAULT_DEADLINE_MS;
  }
}

async function uninstall(values: Values, args: string[], out: Output): Promise<void> {
  if (args.length > 0) throw new UsageError(`hook uninstall takes no arguments, got ${args.join(" ")}`);
  const file = settingsPath(values);
  const events = parseEvents(values, undefined);
  const before = await readSettings(file);
  if (before === undefined)
    return out.result({ settings: file, removed: [] }, `${file} does not exist; nothing to remove`);
  let result: UninstallResult;
  try {
    result = uninstallHooks(before, events);
  } catch (err) {
    throw inFile(file, err);
  }
  if (result.text !== before) await writeFileAtomic(file, result.text);
  out.result(
    { settings: file, removed: result.removed },
    result.removed.length
      ? `${file}: notify hook removed from ${result.removed.join(", ")}`
      : `${file}: no notify hook installed`,
  );
}

// ---- test ----

async function test(values: Values, args: string[], out: Output): Promise<void> {
  const [event, ...extra] = args;
  if (!event) throw new UsageError(`hook test needs an event: ${HOOK_EVENTS.join(", ")}`);
  if (extra.length > 0) throw new UsageError(`hook test takes one event, got also ${extra.join(" ")}`);
  if (!isHookEvent(event)) throw new UsageError(`unknown event "${event}" (known: ${HOOK_EVENTS.join(", ")})`);
  const config = loadHookConfig(process.env, typeof values.config === "string" ? values.config : undefined);
  const { targets, skipped } = notificationTargets(config);
  if (targets.length === 0 && skipped.length === 0)
    throw new Error("no notification target is configured (desktop, bell and webhook are all off)");
  const input = sampleEvent(event, process.cwd(), `test-${randomUUID()}`);
  const outcomes = await deliverEvent(input, targets, Date.now() + config.deadlineMs, createHookLog(config.logFile));
  const lines = [
    ...outcomes.map((o) => `${o.target}: ${o.ok ? "sent" : `failed: ${o.error}`} (${o.ms} ms)`),
    ...skipped.map((s) => `${s.target}: skipped (${s.reason})`),
  ];
  out.result({ event, outcomes, skipped }, lines.join("\n"));
  // Usage reporting is left out: a test is not an execution of the hook.
  if (outcomes.some((o) => !o.ok)) process.exitCode = 1;
}
