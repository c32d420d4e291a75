// Validation of what agent runners send: appended messages and model usage reports.
import type { ModelUsage, NewMessage } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { MAX_TOKENS } from "../analytics/ingest/events.js";
import { invalidArgument } from "../platform/errors.js";
import {
  MAX_ID_CHARS,
  MAX_TEXT_CHARS,
  MODEL_TIERS,
  OPENAI_PHASES,
  REASONING_FIELDS,
  RUNNER_ROLES,
  VISIBILITIES,
  oneOf,
  optionalId,
} from "./inputs.js";
import type { NewMessageRow } from "./message-queries.js";
import { newId } from "../platform/ids.js";
import { TOKEN_USAGE_KEYS } from "./settings.js";
import type { ModelUsageReport } from "./telemetry-events.js";
import type { StoredTokenUsage } from "./tables.js";

export const MAX_APPEND_MESSAGES = 100;
export const MAX_CONTENT_BLOCKS = 100;
const MAX_FIELD_CHARS = 1_000_000;

function optionalLongText(field: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  if (value.length > MAX_FIELD_CHARS) throw invalidArgument(field, `must be at most ${MAX_FIELD_CHARS} characters`);
  return value;
}

export function checkNewMessages(messages: readonly NewMessage[]): NewMessageRow[] {
  if (messages.length > MAX_APPEND_MESSAGES)
    throw invalidArgument("messages", `must have at most ${MAX_APPEND_MESSAGES} items, got ${messages.length}`);
  return messages.map((m, i) => {
    const at = `messages[${i}]`;
    if (m.role === "") throw invalidArgument(`${at}.role`, `is required (${RUNNER_ROLES.join(", ")})`);
    const role = oneOf(`${at}.role`, m.role, RUNNER_ROLES)!;
    if (m.content.length > MAX_CONTENT_BLOCKS)
      throw invalidArgument(`${at}.content`, `must have at most ${MAX_CONTENT_BLOCKS} blocks`);
    const content = m.content.map((block, j) => {
      if (block.text.length > MAX_TEXT_CHARS)
        throw invalidArgument(`${at}.content[${j}].text`, `must be at most ${MAX_TEXT_CHARS} characters`);
      if (block.id.length > MAX_ID_CHARS)
        throw invalidArgument(`${at}.content[${j}].id`, `must be at most ${MAX_ID_CHARS} characters`);
      return { text: block.text, id: block.id || newId() };
    });
    return {
      role,
      content,
      parent_id: optionalId(`${at}.parentId`, m.parentId) ?? null,
      visibility: oneOf(`${at}.visibility`, m.visibility, VISIBILITIES) ?? null,
      openai_message_id: optionalId(`${at}.openaiMessageId`, m.openaiMessageId) ?? null,
      openai_phase: oneOf(`${at}.openaiPhase`, m.openaiPhase, OPENAI_PHASES) ?? null,
      openai_encrypted_content: optionalLongText(`${at}.openaiEncryptedContent`, m.openaiEncryptedContent),
      openai_reasoning_id: optionalId(`${at}.openaiReasoningId`, m.openaiReasoningId) ?? null,
      openai_reasoning_summary: optionalLongText(`${at}.openaiReasoningSummary`, m.openaiReasoningSummary),
      chat_completion_reasoning_field:
        oneOf(`${at}.chatCompletionReasoningField`, m.chatCompletionReasoningField, REASONING_FIELDS) ?? null,
      chat_completion_reasoning_content: optionalLongText(
        `${at}.chatCompletionReasoningContent`,
        m.chatCompletionReasoningContent,
      ),
      is_user_visible: m.isUserVisible ?? null,
      is_error: m.isError ?? null,
    };
  });
}

/**
 * Token counts are whole numbers (docs/telemetry.md, model_usage); factoryCredits may be
 * fractional. Each is at most MAX_TOKENS, the bound of the telemetry event every report becomes.
 */
export function checkModelUsage(reports: readonly ModelUsage[]): ModelUsageReport[] {
  return reports.map((r, i) => {
    const at = `modelUsage[${i}]`;
    if (r.modelId === "") throw invalidArgument(`${at}.modelId`, "is required");
    if (r.modelId.length > MAX_ID_CHARS)
      throw invalidArgument(`${at}.modelId`, `must be at most ${MAX_ID_CHARS} characters`);
    if (r.modelTier === "") throw invalidArgument(`${at}.modelTier`, `is required (${MODEL_TIERS.join(", ")})`);
    const modelTier = oneOf(`${at}.modelTier`, r.modelTier, MODEL_TIERS)!;
    if (!r.usage) throw invalidArgument(`${at}.usage`, "is required");
    const usage = {} as StoredTokenUsage;
    for (const key of TOKEN_USAGE_KEYS) {
      const n = r.usage[key];
      const whole = key !== "factoryCredits";
      if (!Number.isFinite(n) || n < 0 || n > MAX_TOKENS || (whole && !Number.isInteger(n))) {
        throw invalidArgument(
          `${at}.usage.${key}`,
          `must be ${whole ? "a whole number" : "a number"} from 0 to ${MAX_TOKENS}, got ${n}`,
        );
      }
      usage[key] = n;
    }
    return { modelId: r.modelId, modelTier, usage };
  });
}
