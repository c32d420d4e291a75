// Preloaded (`node --import …/stall-probe.js`) into every process the bench serves from: once a
// second it appends that second's stalls (stalls.ts) as a JSON line to BENCH_STALL_FILE, which the
// orchestrator reads back for each measured window. Nothing in the service knows of it.
import { appendFileSync } from "node:fs";
import { startStallMonitor, type StallLine } from "./stalls.js";

const file = process.env.BENCH_STALL_FILE;
if (file) {
  const monitor = startStallMonitor();
  setInterval(() => {
    const line: StallLine = { t: Date.now(), ...monitor.take() };
    appendFileSync(file, `${JSON.stringify(line)}\n`);
  }, 1000).unref();
}
