// The terminal bell: BEL written to the controlling terminal (/dev/tty), not to stdout, which
// belongs to the agent. Without a terminal (CI, a detached agent) it fails quietly into the log.
import { open } from "node:fs/promises";
import type { Target } from "./deliver.js";

export function bellTarget(device = "/dev/tty"): Target {
  return {
    name: "bell",
    async send(_notice, signal) {
      signal.throwIfAborted();
      const handle = await open(device, "a");
      try {
        await handle.write("\x07");
      } finally {
        await handle.close();
      }
    },
  };
}
