// `agentplane --help` against the command table: every registered command is listed with every
// option it accepts, and the command line refuses an option the command does not list. The
// expectations come from COMMANDS (and the hook command's options), so a command added to the
// table without its help, or an option read without being listed, fails here.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { COMMANDS } from "../services/cli/commands.js";
import { HOOK_OPTIONS } from "../services/cli/hooks/commands.js";

const run = promisify(execFile);

async function agentplane(...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, ["bin/agentplane.js", ...args], {
      env: { ...process.env, LOG_LEVEL: "silent" },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The help's entries: each starts on a line indented by exactly two spaces, its summary below. */
function entries(help: string): string[] {
  const out: string[] = [];
  for (const line of help.split("\n")) {
    if (/^ {2}\S/.test(line)) out.push(line.trim());
    else if (/^ {3,}\S/.test(line) && out.length > 0) out[out.length - 1] += ` ${line.trim()}`;
  }
  return out;
}

/** The --options an entry's text names. */
function optionsNamed(text: string): string[] {
  return [...new Set([...text.matchAll(/(?<![\w-])--([a-z][a-z-]*)/g)].map((m) => m[1]!))];
}

describe("agentplane --help", () => {
  it("lists every registered command once, with every option it accepts and no other", async () => {
    const help = await agentplane("--help");
    expect(help.code).toBe(0);
    const listed = entries(help.stdout);
    const words = Object.keys(COMMANDS);
    expect(words).toEqual(expect.arrayContaining(["readiness submit", "readiness repos", "ingest", "rollup"]));
    for (const [key, command] of Object.entries(COMMANDS)) {
      const matching = listed.filter((entry) => entry === key || entry.startsWith(`${key} `));
      expect(matching, `"${key}" in --help`).toHaveLength(1);
      const entry = matching[0]!;
      const head = `${key} ${command.usage}`.trim();
      expect(entry.startsWith(head), `"${key}" entry starts with its usage`).toBe(true);
      // The usage names exactly the options the command accepts: none missing, none refused.
      expect(optionsNamed(command.usage).sort(), `options in the usage of "${key}"`).toEqual(
        [...command.options].sort(),
      );
      expect(command.summary.trim(), `summary of "${key}"`).not.toBe("");
    }
    // Nothing else is listed but the hook commands, which have a help of their own.
    const others = listed.filter((entry) => !words.some((key) => entry === key || entry.startsWith(`${key} `)));
    expect(others.map((entry) => entry.split(" ")[0])).toEqual(["hook"]);
  }, 60_000);

  it("refuses an option that the command does not accept, naming it (exit 2)", async () => {
    // --org is an option of other commands (rollup, demo), so the parser knows it; migrate does not take it.
    expect(COMMANDS.migrate!.options).not.toContain("org");
    expect(COMMANDS.rollup!.options).toContain("org");
    const foreign = await agentplane("migrate", "--org", "x");
    expect([foreign.code, foreign.stderr.trim()]).toEqual([
      2,
      'agentplane: --org is not an option of "migrate" (agentplane --help lists them)',
    ]);
    const json = await agentplane("key", "create", "--name", "x", "--json");
    expect(json.code).toBe(2);
    expect(JSON.parse(json.stdout)).toEqual({
      error: '--name is not an option of "key create" (agentplane --help lists them)',
    });
  }, 60_000);

  it("agentplane hook --help names every option the hook commands accept", async () => {
    const help = await agentplane("hook", "--help");
    expect(help.code).toBe(0);
    expect(optionsNamed(help.stdout).sort()).toEqual([...HOOK_OPTIONS].sort());
    for (const sub of ["notify", "install", "uninstall", "test"])
      expect(help.stdout).toMatch(new RegExp(`^ {2}${sub}\\b`, "m"));
  }, 60_000);
});
