// How `agentplane …` (main.ts) and `agentplane hook …` (hooks/commands.ts) read their options:
// --json and -h/--help on every command, every other option a named string. One reader, so the
// two entry points accept the same spellings; each keeps its own answer to a malformed line.
import { parseArgs, type ParseArgsConfig } from "node:util";
import { UsageError } from "./output.js";

export interface CommandLine<Name extends string> {
  readonly values: { readonly json: boolean; readonly help: boolean } & { readonly [N in Name]?: string };
  readonly positionals: string[];
}

/** Strict: an unknown option, or one missing its value, is a UsageError in parseArgs' words. */
export function parseCommandLine<const Name extends string>(
  argv: string[],
  stringOptions: readonly Name[],
): CommandLine<Name> {
  const options: NonNullable<ParseArgsConfig["options"]> = {
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  };
  for (const name of stringOptions) options[name] = { type: "string" };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  return { values: values as CommandLine<Name>["values"], positionals };
}
