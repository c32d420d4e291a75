// `agentplane hook notify`: one hook event from stdin to every configured target, within the
// deadline, never failing the agent. The caller exits 0 whatever this returns.
import type { Readable } from "node:stream";
import { bellTarget } from "./bell.js";
import type { HookConfig } from "./config.js";
import { deliverAll, type Outcome, type Target } from "./deliver.js";
import { desktopTarget, missingNotifier } from "./desktop.js";
import { describeEvent, MAX_INPUT_BYTES, parseHookInput, type HookInput } from "./events.js";
import type { HookLog } from "./log.js";
import { readInput } from "./stdin.js";
import { usageTarget } from "./usage.js";
import { webhookTarget } from "./webhook.js";

export interface TargetSet {
  targets: Target[];
  /** Targets turned on that this machine cannot serve (no notifier installed): not failures. */
  skipped: Array<{ target: string; reason: string }>;
}

/** The notification targets the configuration turns on (usage reporting is not one of them). */
export function notificationTargets(config: HookConfig): TargetSet {
  const set: TargetSet = { targets: [], skipped: [] };
  if (config.desktop) {
    const desktop = desktopTarget();
    if (desktop) set.targets.push(desktop);
    else set.skipped.push({ target: "desktop", reason: missingNotifier() });
  }
  if (config.bell) set.targets.push(bellTarget());
  if (config.webhook) set.targets.push(webhookTarget(config.webhook));
  return set;
}

export interface NotifyResult {
  /** Why nothing was sent (bad input), if so. */
  skipped?: string;
  input?: HookInput;
  outcomes: Outcome[];
}

/** Sends one event through the targets and logs every failure; never throws. */
export async function deliverEvent(
  input: HookInput,
  targets: readonly Target[],
  deadlineAt: number,
  log: HookLog,
): Promise<Outcome[]> {
  const notice = { text: describeEvent(input), input, at: new Date() };
  const outcomes = await deliverAll(targets, notice, deadlineAt);
  for (const outcome of outcomes) {
    if (!outcome.ok)
      log.write("warn", `${outcome.target} failed`, {
        event: input.event,
        session_id: input.sessionId,
        target: outcome.target,
        error: outcome.error,
        ms: outcome.ms,
      });
  }
  return outcomes;
}

export async function notifyFromStdin(
  stdin: Readable,
  config: HookConfig,
  deadlineAt: number,
  log: HookLog,
): Promise<NotifyResult> {
  const read = await readInput(stdin, deadlineAt, MAX_INPUT_BYTES);
  const parsed = read.ok ? parseHookInput(read.text) : { ok: false as const, reason: read.reason };
  if (!parsed.ok) {
    log.write("warn", "hook input ignored; nothing sent", { reason: parsed.reason });
    return { skipped: parsed.reason, outcomes: [] };
  }
  // A missing desktop notifier is the machine's normal state, not a failure to log each time.
  const { targets } = notificationTargets(config);
  if (config.usage) targets.push(usageTarget(config.usage));
  const outcomes = await deliverEvent(parsed.input, targets, deadlineAt, log);
  return { input: parsed.input, outcomes };
}
