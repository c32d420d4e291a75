// What stalls a Node process while it serves or drives load: how late its event loop ran (the
// longest delay of a timer, monitorEventLoopDelay) and how long the garbage collector paused it
// (PerformanceObserver "gc" entries). A tail latency far above the median, at a load the CPU can
// carry, is either the process not running (these stalls), or a queue outside it; these figures
// tell the two apart for both ends of every measured request.
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";

export interface StallFigures {
  /** The longest event-loop delay, ms. */
  loopMaxMs: number;
  /** The longest garbage-collection pause, ms. */
  gcMaxMs: number;
  /** Time spent in garbage-collection pauses, ms. */
  gcMs: number;
}

export interface StallMonitor {
  /** The figures since the last take (or the start), and a fresh start. */
  take(): StallFigures;
  stop(): void;
}

/** Samples the event loop every `resolutionMs` (a timer of its own; 10 ms costs next to nothing). */
export function startStallMonitor(resolutionMs = 10): StallMonitor {
  const loop = monitorEventLoopDelay({ resolution: resolutionMs });
  loop.enable();
  let gcMaxMs = 0;
  let gcMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gcMs += entry.duration;
      if (entry.duration > gcMaxMs) gcMaxMs = entry.duration;
    }
  });
  gc.observe({ entryTypes: ["gc"] });
  return {
    take() {
      // The histogram's max is in ns, and 0 until it has a sample.
      const figures = { loopMaxMs: loop.max / 1e6, gcMaxMs, gcMs };
      loop.reset();
      gcMaxMs = gcMs = 0;
      return figures;
    },
    stop() {
      loop.disable();
      gc.disconnect();
    },
  };
}

/** A line of a server's stall file: the second that ended at `t` (Date.now()). */
export interface StallLine extends StallFigures {
  t: number;
}

/** The worst of each figure over `lines` whose second lies inside [from, to] (Date.now() values). */
export function stallsWithin(lines: readonly StallLine[], from: number, to: number): StallFigures | undefined {
  const inside = lines.filter((l) => l.t - 1000 >= from - 100 && l.t <= to + 100);
  if (inside.length === 0) return undefined;
  return {
    loopMaxMs: Math.max(...inside.map((l) => l.loopMaxMs)),
    gcMaxMs: Math.max(...inside.map((l) => l.gcMaxMs)),
    gcMs: inside.reduce((s, l) => s + l.gcMs, 0),
  };
}
