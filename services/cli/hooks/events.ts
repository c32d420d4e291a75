// Hook input (docs/interface.md §6): the JSON object an agent writes to a hook's standard input, and the short
// human message each event becomes. Only the fields the spec names are read (plus tool_name on
// PostToolUse when present); anything else in the object is ignored.
import { basename } from "node:path";

export const HOOK_EVENTS = ["Notification", "Stop", "SubagentStop", "SessionEnd", "PostToolUse"] as const;
export type HookEventName = (typeof HOOK_EVENTS)[number];

/** The events `hook install` hooks by default: PostToolUse fires after every tool, too often to notify. */
export const DEFAULT_INSTALL_EVENTS: readonly HookEventName[] = ["Notification", "Stop", "SubagentStop", "SessionEnd"];

export interface HookInput {
  event: HookEventName;
  sessionId?: string;
  cwd?: string;
  /** Notification: what the agent says it is waiting for. */
  message?: string;
  /** SessionEnd: why it ended (error, other, …; the full set is not in the spec). */
  reason?: string;
  /** PostToolUse: the tool that ran, when the agent sends it. */
  toolName?: string;
}

export type ParsedInput = { ok: true; input: HookInput } | { ok: false; reason: string };

/** Stdin larger than this is not a hook event; reading stops there. */
export const MAX_INPUT_BYTES = 1 << 20;

export function isHookEvent(name: string): name is HookEventName {
  return (HOOK_EVENTS as readonly string[]).includes(name);
}

function optionalText(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

/** Reads one hook event; empty input, malformed JSON and unknown events are reasons, never throws. */
export function parseHookInput(raw: string): ParsedInput {
  if (raw.trim() === "") return { ok: false, reason: "empty input: expected a JSON object on stdin" };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    return { ok: false, reason: `malformed JSON: ${(err as Error).message}` };
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return { ok: false, reason: "input must be a JSON object" };
  }
  const fields = json as Record<string, unknown>;
  const name = fields.hook_event_name;
  if (typeof name !== "string" || name === "") return { ok: false, reason: "hook_event_name: missing" };
  if (!isHookEvent(name))
    return {
      ok: false,
      reason: `hook_event_name: unknown event "${clip(name, 60)}" (known: ${HOOK_EVENTS.join(", ")})`,
    };
  const input: HookInput = { event: name };
  const sessionId = optionalText(fields.session_id);
  const cwd = optionalText(fields.cwd);
  const message = optionalText(fields.message);
  const reason = optionalText(fields.reason);
  const toolName = optionalText(fields.tool_name);
  if (sessionId) input.sessionId = sessionId;
  if (cwd) input.cwd = cwd;
  if (message) input.message = message;
  if (reason) input.reason = reason;
  if (toolName) input.toolName = toolName;
  return { ok: true, input };
}

/** Control characters (terminal escapes, newlines) never reach a notification; long text is cut. */
export function clip(text: string, max: number): string {
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** " in <project>" from the working directory's last segment, or nothing without a cwd. */
function where(cwd: string | undefined): string {
  if (!cwd) return "";
  const name = basename(cwd.replace(/[\\/]+$/, "")) || cwd;
  return ` in ${clip(name, 80)}`;
}

/** The one-line message for an event, e.g. "Agent is waiting for you in api: Permission needed". */
export function describeEvent(input: HookInput): string {
  const at = where(input.cwd);
  switch (input.event) {
    case "Notification":
      return `Agent is waiting for you${at}${input.message ? `: ${clip(input.message, 200)}` : ""}`;
    case "Stop":
      return `Task finished${at}`;
    case "SubagentStop":
      return `Subagent finished${at}`;
    case "SessionEnd":
      return input.reason ? `Session ended: ${clip(input.reason, 60)}${at}` : `Session ended${at}`;
    case "PostToolUse":
      return `${input.toolName ? clip(input.toolName, 60) : "A tool"} finished${at}`;
  }
}

/** A representative event for `hook test EVENT`. */
export function sampleEvent(event: HookEventName, cwd: string, sessionId: string): HookInput {
  const input: HookInput = { event, cwd, sessionId };
  if (event === "Notification") input.message = "This is a test notification from agentplane";
  if (event === "SessionEnd") input.reason = "other";
  if (event === "PostToolUse") input.toolName = "Bash";
  return input;
}
