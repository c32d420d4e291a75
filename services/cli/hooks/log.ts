// The hook's log file. The agent must never see a hook's failures (they would land in its
// transcript or look like a failed hook), so everything goes here as JSON lines, written
// synchronously so nothing is lost when the command exits at its deadline.
import { appendFileSync, mkdirSync, renameSync, statSync } from "node:fs";
import { dirname } from "node:path";

export type LogLevel = "info" | "warn" | "error";

export interface HookLog {
  write(level: LogLevel, msg: string, fields?: Record<string, unknown>): void;
}

/** Past this size the file is moved to FILE.1 (one generation kept), so it cannot grow forever. */
export const MAX_LOG_BYTES = 1 << 20;

export function createHookLog(file: string): HookLog {
  let checked = false;
  return {
    write(level, msg, fields) {
      const line = `${JSON.stringify({ time: new Date().toISOString(), level, pid: process.pid, msg, ...fields })}\n`;
      try {
        if (!checked) {
          checked = true;
          mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
          rotateIfLarge(file);
        }
        appendFileSync(file, line, { mode: 0o600 });
      } catch {
        // Nowhere left to report to: a hook must stay silent and exit 0.
      }
    },
  };
}

function rotateIfLarge(file: string): void {
  try {
    if (statSync(file).size > MAX_LOG_BYTES) renameSync(file, `${file}.1`);
  } catch {
    // No file yet.
  }
}

/** One line for the log: the message, its system error code and its cause, if any. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as Error & { cause?: unknown }).cause;
    const code = (err as NodeJS.ErrnoException).code;
    const base = code && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
    return cause instanceof Error ? `${base}: ${cause.message}` : base;
  }
  return String(err);
}
