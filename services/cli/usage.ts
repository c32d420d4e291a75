// `agentplane --help`, written from the command table (commands.ts) so that it lists every
// command with the options it accepts: a command added to the table appears here by itself.
import type { Command } from "./commands.js";

/** The column where a command's summary starts, and the width it wraps at. */
const SUMMARY_COLUMN = 46;
const WIDTH = 100;

/** Words of `text` in lines of at most `width` characters (a longer word gets a line of its own). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter((w) => w !== "")) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  if (line !== "") lines.push(line);
  return lines;
}

/** One command's entry: its words and usage, then its summary in the summary column. */
export function commandEntry(words: string, command: Command): string {
  const head = `  ${[words, command.usage].filter((part) => part !== "").join(" ")}`;
  const summary = wrap(command.summary, WIDTH - SUMMARY_COLUMN);
  const indent = " ".repeat(SUMMARY_COLUMN);
  const fits = head.length < SUMMARY_COLUMN - 1;
  const first = fits ? `${head.padEnd(SUMMARY_COLUMN)}${summary[0] ?? ""}` : `${head}\n${indent}${summary[0] ?? ""}`;
  return [first, ...summary.slice(1).map((line) => `${indent}${line}`)].join("\n");
}

/** `agentplane hook …` parses its own command line (hooks/commands.ts) and has its own --help. */
const HOOK_ENTRY = `  ${"hook notify|install|uninstall|test".padEnd(SUMMARY_COLUMN - 2)}client-side agent hooks (agentplane hook --help)`;

export function renderUsage(commands: Readonly<Record<string, Command>>): string {
  const entries = Object.entries(commands).map(([words, command]) => commandEntry(words, command));
  return `usage: agentplane <command> [options] [--json]

Every command takes --json (one JSON object on stdout) and -h/--help; a failure exits non-zero
with a one-line reason on stderr.

commands:
${entries.join("\n")}
${HOOK_ENTRY}
`;
}
