// Resident memory of another process (the server under test), from Linux's /proc: its current
// RSS and its peak since the last reset, so a test can bound what one request or one run cost.
import { readFileSync, writeFileSync } from "node:fs";

const MiB = 1024 * 1024;

export interface Memory {
  /** Resident set size now (VmRSS), MiB. */
  rssMiB: number;
  /** Highest resident set size since the process started or the last resetPeak (VmHWM), MiB. */
  peakMiB: number;
}

function field(status: string, name: string): number {
  const m = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status);
  if (!m) throw new Error(`/proc status has no ${name}`);
  return (Number(m[1]) * 1024) / MiB;
}

export function memoryOf(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return { rssMiB: Math.round(field(status, "VmRSS")), peakMiB: Math.round(field(status, "VmHWM")) };
}

/** Starts a new peak measurement: VmHWM drops to the current RSS (proc(5), clear_refs "5"). */
export function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
}
