import { describe, expect, it } from "vitest";
import { deliverAll, type Notice, type Target } from "./deliver.js";

const notice: Notice = {
  text: "Task finished in api",
  input: { event: "Stop", cwd: "/w/api", sessionId: "s1" },
  at: new Date("2026-03-01T10:00:00Z"),
};

const delay = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    });
  });

describe("deliverAll", () => {
  it("runs the targets in parallel and reports each one", async () => {
    const targets: Target[] = [
      { name: "a", send: (_n, signal) => delay(150, signal) },
      { name: "b", send: (_n, signal) => delay(150, signal) },
      { name: "c", send: async () => Promise.reject(new Error("refused")) },
    ];
    const started = Date.now();
    const outcomes = await deliverAll(targets, notice, Date.now() + 5000);
    expect(Date.now() - started).toBeLessThan(290);
    expect(outcomes.map(({ target, ok, error }) => ({ target, ok, error }))).toEqual([
      { target: "a", ok: true, error: undefined },
      { target: "b", ok: true, error: undefined },
      { target: "c", ok: false, error: "refused" },
    ]);
  });

  it("stops waiting at the deadline, aborting the slow target, even one that ignores its signal", async () => {
    let aborted = false;
    const targets: Target[] = [
      { name: "fast", send: async () => undefined },
      {
        name: "hung",
        send: (_n, signal) => {
          signal.addEventListener("abort", () => (aborted = true));
          return new Promise<void>(() => undefined);
        },
      },
    ];
    const started = Date.now();
    const outcomes = await deliverAll(targets, notice, Date.now() + 200);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(190);
    expect(took).toBeLessThan(600);
    expect(aborted).toBe(true);
    expect(outcomes[0]).toMatchObject({ target: "fast", ok: true });
    expect(outcomes[1]).toMatchObject({ target: "hung", ok: false, error: "deadline: no answer in time" });
  });

  it("with the deadline already passed, gives every target a cancelled signal and returns at once", async () => {
    let sawAbort = false;
    const outcomes = await deliverAll(
      [{ name: "late", send: (_n, signal) => delay(1000, signal).finally(() => (sawAbort = signal.aborted)) }],
      notice,
      Date.now() - 10,
    );
    expect(outcomes[0]).toMatchObject({ ok: false, error: "deadline: no answer in time" });
    await new Promise((r) => setTimeout(r, 5));
    expect(sawAbort).toBe(true);
  });
});
