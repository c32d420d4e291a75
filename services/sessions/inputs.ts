// Request fields shared by several RPCs: enums the spec writes as strings, optional IDs, text.
import { invalidArgument } from "../platform/errors.js";
import type { MessageRole } from "./tables.js";

export const LIST_ROLES = ["user", "assistant", "tool"] as const;
export const RUNNER_ROLES = ["assistant", "tool", "system"] as const;
export const CLIENTS = ["terminal-ui", "web", "non-interactive-cli"] as const;
export const AUTONOMY_MODES = ["auto-high", "auto-medium", "auto-low", "spec", "manual"] as const;
export const VISIBILITIES = ["both", "llm_only", "user_only"] as const;
export const OPENAI_PHASES = ["commentary", "final_answer"] as const;
export const REASONING_FIELDS = ["reasoning", "reasoning_content"] as const;
export const MODEL_TIERS = ["standard", "thinking"] as const;

export const MAX_TEXT_CHARS = 500_000;
export const MAX_ID_CHARS = 200;
export const MAX_TITLE_CHARS = 500;

// An empty string counts as absent, as an empty `limit` does (parsePageLimit): a client that
// builds `?role=&computerId=` means "no filter".

/** One of `allowed`, or undefined when absent; a 400 naming the field otherwise. */
export function oneOf<T extends string>(
  field: string,
  value: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined || value === "") return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw invalidArgument(field, `must be one of ${allowed.join(", ")}, got "${value.slice(0, 40)}"`);
  }
  return value as T;
}

/** An optional identifier: absent (or empty) stays undefined; present must be at most 200 characters. */
export function optionalId(field: string, value: string | undefined): string | undefined {
  if (value === undefined || value === "") return undefined;
  if (value.length > MAX_ID_CHARS) throw invalidArgument(field, `must be at most ${MAX_ID_CHARS} characters`);
  return value;
}

/** A required identifier. */
export function requiredId(field: string, value: string): string {
  if (value.length === 0) throw invalidArgument(field, "is required");
  if (value.length > MAX_ID_CHARS) throw invalidArgument(field, `must be at most ${MAX_ID_CHARS} characters`);
  return value;
}

export function messageText(field: string, text: string): string {
  if (text.trim().length === 0) throw invalidArgument(field, "is required and must not be empty");
  if (text.length > MAX_TEXT_CHARS)
    throw invalidArgument(field, `must be at most ${MAX_TEXT_CHARS} characters, got ${text.length}`);
  return text;
}

export function listRole(value: string | undefined): MessageRole | undefined {
  return oneOf("role", value, LIST_ROLES);
}
