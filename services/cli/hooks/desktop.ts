// The desktop target: notify-send on Linux (and other Unixes with a notification daemon),
// osascript on macOS. Arguments go straight to the program (no shell), so nothing in a message
// can be interpreted as a command.
import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import type { Target } from "./deliver.js";

export const NOTIFICATION_TITLE = "agentplane";

export interface DesktopCommand {
  program: string;
  args: string[];
}

/** The first executable named `name` on PATH, or undefined. */
export function findOnPath(name: string, path = process.env.PATH ?? ""): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/** The notifier command for this platform, or undefined when none is installed. */
export function desktopCommand(
  text: string,
  platform: NodeJS.Platform = process.platform,
  path?: string,
): DesktopCommand | undefined {
  if (platform === "darwin") {
    const program = findOnPath("osascript", path);
    if (!program) return undefined;
    // The texts are passed as script arguments, never spliced into the script.
    const script = ["on run argv", "display notification (item 1 of argv) with title (item 2 of argv)", "end run"];
    return { program, args: [...script.flatMap((line) => ["-e", line]), text, NOTIFICATION_TITLE] };
  }
  if (platform === "win32") return undefined;
  const program = findOnPath("notify-send", path);
  if (!program) return undefined;
  return { program, args: ["--app-name=agentplane", NOTIFICATION_TITLE, text] };
}

export function runCommand(command: DesktopCommand, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command.program, command.args, { stdio: ["ignore", "ignore", "pipe"], signal });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      if (stderr.length < 500) stderr += chunk.toString("utf8");
    });
    child.on("error", reject);
    child.on("close", (code, sig) => {
      if (code === 0) resolve();
      else
        reject(
          new Error(
            `${command.program} ${sig ? `ended by ${sig}` : `exited with ${code}`}${stderr.trim() ? `: ${stderr.trim().split("\n")[0]}` : ""}`,
          ),
        );
    });
  });
}

/** The desktop target, or undefined when this machine has no notifier to run. */
export function desktopTarget(platform: NodeJS.Platform = process.platform, path?: string): Target | undefined {
  if (!desktopCommand("", platform, path)) return undefined;
  return {
    name: "desktop",
    async send(notice, signal) {
      const command = desktopCommand(notice.text, platform, path);
      if (!command) throw new Error("the desktop notifier disappeared from PATH");
      await runCommand(command, signal);
    },
  };
}

export function missingNotifier(platform: NodeJS.Platform = process.platform): string {
  if (platform === "darwin") return "osascript not found";
  if (platform === "win32") return "no desktop notifier on Windows";
  return "notify-send not found on PATH";
}
