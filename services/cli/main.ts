// The agentplane command (DESIGN.md §5).
import { parseServices, type Config } from "../platform/config.js";
import { createLogger } from "../platform/logger.js";
import { parseCommandLine } from "./options.js";
import { createOutput, fail, UsageError, type Output } from "./output.js";
// commands.ts (and with it the whole server) is imported only once the command is known, so
// `agentplane hook …`, which agents run on every event, starts without it.

const USAGE = `usage: agentplane <command> [options] [--json]

commands:
  serve [--services a,b]                      run the services and the REST edge (npm start)
  migrate                                     apply database migrations and exit
  org create --name N [--plan P]              create an organization; prints its id
  user create --org ID --email E --role R [--first-name F --last-name L]
                                              create a user (role: owner, manager, member, guest)
  key create --user ID                        create an API key for a user (shown once)
  service-account create --name N --scopes a,b [--org ID]
                                              create a workload credential for the internal
                                              gRPC services (token shown once); scopes:
                                              sessions.runner, computers.host, analytics.ingest,
                                              analytics.rollup, readiness.submit,
                                              organization.credits; --org binds it to one
                                              organization
  service-account list [--org ID]             list service accounts (never their tokens)
  service-account revoke ID                   revoke one; every replica refuses it within 1 s
  demo [--org ID] [--days N] [--users N]      write demo data (default: the demo organization,
                                              30 days, 12 users)
  ingest FILE.jsonl|-                         load telemetry events (one JSON object a line)
  rollup [--date D | --from D --to D] [--org ID]
                                              recompute daily analytics (default: yesterday)
  multiplier set MODEL_ID M | unset MODEL_ID | list
                                              credit multipliers per model (default 1)
  price set MODEL_ID --input USD --output USD --cache-read USD --cache-write USD
                                              price per million tokens of a model (for
                                              /costs; applied at the next rollup of a day)
  price list | price remove MODEL_ID          list or remove model prices
  runner [--exec CMD] [--url URL] [--org ID] [--name N]
                                              claim and answer pending sessions over the
                                              internal gRPC port, with the token in
                                              AGENTPLANE_RUNNER_TOKEN (scope sessions.runner);
                                              --exec runs CMD per run (the user messages on its
                                              stdin, its stdout the reply); without it, the
                                              demo runner's reply. --url default: this
                                              machine's INTERNAL_GRPC_PORT
  hook notify|install|uninstall|test          client-side agent hooks (agentplane hook --help)
`;

const OPTIONS = [
  "services",
  "name",
  "plan",
  "org",
  "email",
  "role",
  "first-name",
  "last-name",
  "user",
  "days",
  "users",
  "date",
  "from",
  "to",
  "scopes",
  "url",
  "exec",
  "input",
  "output",
  "cache-read",
  "cache-write",
] as const;

async function main(argv: string[]): Promise<void> {
  // Hooks parse their own options: `hook notify` must exit 0 whatever it is given.
  if (argv[0] === "hook") return (await import("./hooks/commands.js")).runHookCommand(argv.slice(1));
  let line: ReturnType<typeof parseCommandLine<(typeof OPTIONS)[number]>>;
  try {
    line = parseCommandLine(argv, OPTIONS);
  } catch (err) {
    return fail(err, argv.includes("--json"));
  }
  const { values, positionals } = line;
  const out: Output = createOutput(values.json === true);
  try {
    const { COMMANDS } = await import("./commands.js");
    // With the modules, whose configuration sections it reads.
    const { loadConfig } = await import("../config.js");
    const key = positionals.slice(0, 2).join(" ");
    const command = COMMANDS[key] ?? COMMANDS[positionals[0] ?? ""];
    if (values.help || !command) {
      if (values.help) return void process.stdout.write(USAGE);
      throw new UsageError(
        positionals.length === 0
          ? "no command given (agentplane --help lists them)"
          : `unknown command "${positionals.join(" ")}" (agentplane --help lists them)`,
      );
    }
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
