// The agentplane command (docs/README.md lists its documentation; `agentplane --help` its commands).
import { parseServices, type Config } from "../platform/config.js";
import { createLogger } from "../platform/logger.js";
import type { Command } from "./commands.js";
import { parseCommandLine } from "./options.js";
import { createOutput, fail, UsageError, type Output } from "./output.js";
import { renderUsage } from "./usage.js";
// commands.ts (and with it the whole server) is imported only once the command is known not to
// be `agentplane hook …`, which agents run on every event, so a hook starts without it.

/** Every option some command reads: what the command line parses before it knows the command. */
function commandOptions(commands: Readonly<Record<string, Command>>): string[] {
  return [...new Set(Object.values(commands).flatMap((command) => command.options))];
}

/** An option the command does not read is a usage error, not silently ignored. */
function refuseForeignOptions(words: string, command: Command, values: Readonly<Record<string, unknown>>): void {
  for (const [name, value] of Object.entries(values)) {
    if (name === "json" || name === "help" || value === undefined || command.options.includes(name)) continue;
    throw new UsageError(`--${name} is not an option of "${words}" (agentplane --help lists them)`);
  }
}

async function main(argv: string[]): Promise<void> {
  // Hooks parse their own options: `hook notify` must exit 0 whatever it is given.
  if (argv[0] === "hook") return (await import("./hooks/commands.js")).runHookCommand(argv.slice(1));
  let out: Output = createOutput(argv.includes("--json"));
  try {
    const { COMMANDS } = await import("./commands.js");
    const { values, positionals } = parseCommandLine(argv, commandOptions(COMMANDS));
    out = createOutput(values.json === true);
    // With the modules, whose configuration sections it reads.
    const { loadConfig } = await import("../config.js");
    const key = positionals.slice(0, 2).join(" ");
    const words = COMMANDS[key] ? key : (positionals[0] ?? "");
    const command = COMMANDS[words];
    if (values.help || !command) {
      if (values.help) return void process.stdout.write(renderUsage(COMMANDS));
      throw new UsageError(
        positionals.length === 0
          ? "no command given (agentplane --help lists them)"
          : `unknown command "${positionals.join(" ")}" (agentplane --help lists them)`,
      );
    }
    refuseForeignOptions(words, command, values);
    const env = { ...process.env };
    if (typeof values.services === "string") env.SERVICES = parseServices(values.services).join(",");
    const config: Config = loadConfig(env);
    // Logs go to stderr so stdout stays the command's answer; the server's are buffered.
    const logger = createLogger(
      command.quiet && !process.env.LOG_LEVEL ? "warn" : config.logLevel,
      true,
      command === COMMANDS.serve,
    );
    await command.run({
      config,
      logger,
      out,
      options: values as Record<string, string | boolean | undefined>,
      args: positionals.slice(command.words),
    });
  } catch (err) {
    fail(err, out.json);
  }
}

await main(process.argv.slice(2));
