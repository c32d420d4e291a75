// `agentplane runner`: an agent runner out of process. It claims pending sessions through
// SessionRunnerService on the internal gRPC port with a workload credential (a service account
// with the sessions.runner scope, given in AGENTPLANE_RUNNER_TOKEN: never on the command line,
// where other users could read it), and answers each run with --exec's command (its standard
// input the user messages, its standard output the reply), or, without --exec, with the demo
// runner's reply. It stops on SIGINT or SIGTERM once the run in hand is finished.
import { randomBytes } from "node:crypto";
import { commandAnswer, demoAnswer } from "../sessions/runner/answers.js";
import { runSessions } from "../sessions/runner/run-loop.js";
import { runnerClient } from "../sessions/runner/runner-client.js";
import type { Command, CommandContext } from "./commands.js";
import { UsageError } from "./output.js";

export const RUNNER_TOKEN_ENV = "AGENTPLANE_RUNNER_TOKEN";

function option(ctx: CommandContext, name: string): string | undefined {
  const value = ctx.options[name];
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
}

async function runner(ctx: CommandContext): Promise<void> {
  const token = process.env[RUNNER_TOKEN_ENV];
  if (!token)
    throw new UsageError(
      `${RUNNER_TOKEN_ENV} must hold a service-account token with the sessions.runner scope (agentplane service-account create --name runner --scopes sessions.runner)`,
    );
  const url = option(ctx, "url") ?? `http://127.0.0.1:${ctx.config.internalGrpcPort}`;
  if (!/^https?:\/\//.test(url)) throw new UsageError(`--url must be an http:// or https:// URL, got "${url}"`);
  const exec = option(ctx, "exec");
  const name = option(ctx, "name") ?? `runner-${randomBytes(3).toString("hex")}`;
  const client = runnerClient(url, token);
  const stop = new AbortController();
  process.once("SIGTERM", () => stop.abort());
  process.once("SIGINT", () => stop.abort());
  ctx.logger.info(
    { url, runner: name, answer: exec === undefined ? "demo" : "command" },
    exec === undefined ? "runner started, answering as the demo runner (--exec CMD runs a command)" : "runner started",
  );
  await runSessions({
    client,
    runnerId: name,
    orgId: option(ctx, "org"),
    answer: exec === undefined ? demoAnswer : commandAnswer(exec),
    logger: ctx.logger,
    signal: stop.signal,
  });
  ctx.out.result({ ok: true, runner: name }, "runner stopped");
}

export const RUNNER_COMMANDS: Record<string, Command> = {
  runner: {
    words: 1,
    quiet: false,
    options: ["exec", "url", "org", "name"],
    usage: "[--exec CMD] [--url URL] [--org ID] [--name N]",
    summary: `claim and answer pending sessions over the internal gRPC port with the service-account token in ${RUNNER_TOKEN_ENV} (scope sessions.runner): --exec runs CMD once per run (the user messages on its stdin, its stdout the reply), else the demo runner's reply; --url defaults to this machine's INTERNAL_GRPC_PORT, --org limits it to one organization, --name names it`,
    run: runner,
  },
};
