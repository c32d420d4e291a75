// The bench's stall figures: a blocked event loop shows as a loop delay at least as long as the
// block, and the orchestrator keeps only the seconds inside a measured window.
import { describe, expect, it } from "vitest";
import { startStallMonitor, stallsWithin, type StallLine } from "../../bench/stalls.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("stall monitor", () => {
  it("reports a blocked event loop, then starts afresh", async () => {
    const monitor = startStallMonitor(5);
    try {
      await sleep(30);
      const until = performance.now() + 80;
      while (performance.now() < until) {
        // Busy: the loop cannot run the monitor's timer.
      }
      await sleep(30);
      const blocked = monitor.take();
      expect(blocked.loopMaxMs).toBeGreaterThanOrEqual(70);
      await sleep(50);
      expect(monitor.take().loopMaxMs).toBeLessThan(70);
    } finally {
      monitor.stop();
    }
  });

  it("keeps the seconds inside the window and takes the worst of each", () => {
    const line = (t: number, loopMaxMs: number, gcMaxMs: number, gcMs: number): StallLine => ({
      t,
      loopMaxMs,
      gcMaxMs,
      gcMs,
    });
    const lines = [line(10_000, 500, 50, 60), line(11_000, 20, 3, 4), line(12_000, 40, 8, 9), line(13_000, 900, 1, 1)];
    // The window 10,000–12,000 holds the seconds ending at 11,000 and 12,000 only.
    expect(stallsWithin(lines, 10_000, 12_000)).toEqual({ loopMaxMs: 40, gcMaxMs: 8, gcMs: 13 });
    expect(stallsWithin(lines, 20_000, 30_000)).toBeUndefined();
  });
});
