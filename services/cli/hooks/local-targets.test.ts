import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bellTarget } from "./bell.js";
import type { Notice } from "./deliver.js";
import { desktopCommand, desktopTarget, findOnPath, runCommand } from "./desktop.js";

const notice: Notice = { text: "Task finished in api", input: { event: "Stop" }, at: new Date() };

/** A directory with stand-in notifier programs that record their arguments, one per line. */
function fakeNotifiers(exitCode = 0): { dir: string; record: string } {
  const dir = mkdtempSync(join(tmpdir(), "hook-bin-"));
  const record = join(dir, "args.txt");
  const script = `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a" >> '${record}'; done\n${exitCode ? `echo "no session bus" >&2\nexit ${exitCode}` : ""}\n`;
  for (const name of ["notify-send", "osascript"]) {
    writeFileSync(join(dir, name), script);
    chmodSync(join(dir, name), 0o755);
  }
  return { dir, record };
}

describe("desktop notifications", () => {
  it("runs notify-send on Linux with the message as a plain argument", async () => {
    const { dir, record } = fakeNotifiers();
    const text = `Agent is waiting for you in api: $(rm -rf ~) "quoted"`;
    const command = desktopCommand(text, "linux", dir);
    expect(command).toEqual({ program: join(dir, "notify-send"), args: ["--app-name=agentplane", "agentplane", text] });
    await runCommand(command!, new AbortController().signal);
    expect(readFileSync(record, "utf8")).toBe(`--app-name=agentplane\nagentplane\n${text}\n`);
  });

  it("runs osascript on macOS with the texts as script arguments, never inside the script", () => {
    const { dir } = fakeNotifiers();
    const command = desktopCommand('say "hi"', "darwin", dir);
    expect(command?.program).toBe(join(dir, "osascript"));
    expect(command?.args.slice(-2)).toEqual(['say "hi"', "agentplane"]);
    expect(command?.args.filter((_a, i) => command.args[i - 1] === "-e").join("\n")).not.toContain("say");
  });

  it("is a target only where a notifier is installed", async () => {
    expect(desktopTarget("linux", "/nonexistent")).toBeUndefined();
    const { dir, record } = fakeNotifiers();
    await desktopTarget("linux", dir)?.send(notice, new AbortController().signal);
    expect(readFileSync(record, "utf8")).toBe("--app-name=agentplane\nagentplane\nTask finished in api\n");
  });

  it("has no command when the notifier is not installed, and reports a failing one", async () => {
    expect(desktopCommand("x", "linux", "/nonexistent")).toBeUndefined();
    expect(desktopCommand("x", "win32", "/usr/bin")).toBeUndefined();
    expect(findOnPath("sh", "/nonexistent:/bin:/usr/bin")).toMatch(/\/sh$/);
    const { dir } = fakeNotifiers(3);
    await expect(runCommand(desktopCommand("x", "linux", dir)!, new AbortController().signal)).rejects.toThrow(
      /notify-send exited with 3: no session bus/,
    );
  });
});

describe("terminal bell", () => {
  it("writes BEL to the terminal device", async () => {
    const device = join(mkdtempSync(join(tmpdir(), "hook-tty-")), "tty");
    writeFileSync(device, "");
    await bellTarget(device).send(notice, new AbortController().signal);
    expect(readFileSync(device, "utf8")).toBe("\x07");
  });

  it("fails (into the log, not the agent) without a terminal", async () => {
    await expect(bellTarget("/nonexistent/tty").send(notice, new AbortController().signal)).rejects.toThrow(/ENOENT/);
  });
});
