// Delivery of one notification to every configured target at once. Each target gets an
// AbortSignal that fires at the deadline, and the wait for a target also ends there even if it
// ignores the signal: a slow or hung target can never hold the hook past its deadline.
import type { HookInput } from "./events.js";
import { errorMessage } from "./log.js";

export interface Notice {
  /** The one-line human message. */
  text: string;
  input: HookInput;
  /** When the event was handled (the webhook payload and telemetry time). */
  at: Date;
}

export interface Target {
  readonly name: string;
  send(notice: Notice, signal: AbortSignal): Promise<void>;
}

export interface Outcome {
  target: string;
  ok: boolean;
  /** Why it failed (timeouts say "deadline"). */
  error?: string;
  ms: number;
}

/** Runs every target in parallel; resolves by `deadlineAt` (epoch ms) at the latest. */
export async function deliverAll(targets: readonly Target[], notice: Notice, deadlineAt: number): Promise<Outcome[]> {
  const remaining = Math.max(0, deadlineAt - Date.now());
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<"deadline">((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new Error(`deadline of the hook reached`));
      resolve("deadline");
    }, remaining);
  });
  try {
    return await Promise.all(
      targets.map(async (target): Promise<Outcome> => {
        const started = Date.now();
        try {
          const result = await Promise.race([
            target.send(notice, controller.signal).then(() => "sent" as const),
            expired,
          ]);
          if (result === "deadline")
            return { target: target.name, ok: false, error: "deadline: no answer in time", ms: Date.now() - started };
          return { target: target.name, ok: true, ms: Date.now() - started };
        } catch (err) {
          const error = controller.signal.aborted ? "deadline: no answer in time" : errorMessage(err);
          return { target: target.name, ok: false, error, ms: Date.now() - started };
        }
      }),
    );
  } finally {
    clearTimeout(timer);
  }
}
