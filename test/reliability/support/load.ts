// Closed-loop load: `workers` clients each run `op` back to back until stop(); every outcome is
// recorded with its start time and latency, for the fault tests' timelines.
export interface Outcome<T> {
  /** ms since the load started. */
  at: number;
  ms: number;
  status: number;
  value?: T;
  error?: string;
}

export interface Load<T> {
  readonly outcomes: Outcome<T>[];
  stop(): Promise<Outcome<T>[]>;
  /** ms since the load started. */
  now(): number;
}

export function startLoad<T>(
  workers: number,
  op: (worker: number, n: number) => Promise<{ status: number; value?: T }>,
  pauseMs = 0,
): Load<T> {
  const outcomes: Outcome<T>[] = [];
  const t0 = performance.now();
  const now = () => performance.now() - t0;
  let running = true;
  const loops = Array.from({ length: workers }, async (_, w) => {
    for (let n = 0; running; n++) {
      const at = now();
      try {
        const { status, value } = await op(w, n);
        outcomes.push({ at, ms: now() - at, status, value });
      } catch (e) {
        outcomes.push({ at, ms: now() - at, status: 0, error: (e as Error).message });
      }
      if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
    }
  });
  return {
    outcomes,
    now,
    async stop() {
      running = false;
      await Promise.all(loops);
      return outcomes;
    },
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
