// Rows → the response shapes of spec §2.8 / §2.9. The list shapes are separate messages that
// simply lack the fields the spec leaves out of lists.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  MessageListItemSchema,
  MessageSchema,
  SessionListItemSchema,
  SessionSchema,
  SessionSettingsSchema,
} from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { visibleStatus } from "./session-queries.js";
import type { MessageRow, SessionRow } from "./tables.js";
import type { SessionUsage } from "./usage.js";

type SessionInit = MessageInitShape<typeof SessionSchema>;
type SessionListItemInit = MessageInitShape<typeof SessionListItemSchema>;
type SettingsInit = MessageInitShape<typeof SessionSettingsSchema>;
type MessageInit = MessageInitShape<typeof MessageSchema>;
type MessageListItemInit = MessageInitShape<typeof MessageListItemSchema>;

const present = <K extends string, V>(key: K, value: V | null | undefined): { [P in K]?: V } =>
  (value === null || value === undefined ? {} : { [key]: value }) as { [P in K]?: V };

/** What a session's list item is built from: its row's columns, its times as Unix ms. */
export type SessionListItemSource = Pick<SessionRow, "id" | "title" | "computer_id" | "message_count" | "settings"> & {
  created_ms: number;
  updated_ms: number;
  completed_ms: number | null;
};
/** What a full session is built from. */
export type SessionSource = Pick<
  SessionRow,
  "id" | "title" | "computer_id" | "message_count" | "settings" | "created_at" | "updated_at" | "completed_at" | "status" | "lease_expires_at"
>;

// The builders below assign optional fields one by one instead of spreading a fresh object per
// field: a list of 100 sessions builds thousands of these (issue #9 profile: 8% of a list request).

export function toSessionSettings(row: Pick<SessionRow, "settings">, usage: SessionUsage): SettingsInit {
  const s = row.settings;
  const out: SettingsInit = {
    tokenUsage: usage.own,
    inclusiveTokenUsage: usage.inclusive,
    childInclusiveTokenUsageBySessionId: usage.children,
    tags: s.tags == null ? [] : s.tags.map((t) => ({ name: t.name, metadata: (t.metadata ?? {}) as never })),
    enabledToolIds: s.enabledToolIds ?? [],
    disabledToolIds: s.disabledToolIds ?? [],
  };
  if (s.model != null) out.model = s.model;
  if (s.specModeModel != null) out.specModeModel = s.specModeModel;
  if (s.providerLockTimestamp != null) out.providerLockTimestamp = s.providerLockTimestamp;
  if (s.assistantActiveTimeMs != null) out.assistantActiveTimeMs = s.assistantActiveTimeMs;
  if (s.archivedAt != null) out.archivedAt = s.archivedAt;
  return out;
}

interface SessionFields {
  sessionId: string;
  messageCount: number;
  createdAt: number;
  updatedAt: number;
  sessionSettings: SettingsInit;
  title?: string;
  completedAt?: number;
  computerId?: string;
}

// The fields a list item and a full session share, as a plain object both shapes accept.
function sessionFields(
  row: Pick<SessionRow, "id" | "title" | "computer_id" | "message_count" | "settings">,
  times: { created: number; updated: number; completed: number | null },
  usage: SessionUsage,
): SessionFields {
  const out: SessionFields = {
    sessionId: row.id,
    messageCount: row.message_count,
    createdAt: times.created,
    updatedAt: times.updated,
    sessionSettings: toSessionSettings(row, usage),
  };
  if (row.title !== null) out.title = row.title;
  if (times.completed !== null) out.completedAt = times.completed;
  if (row.computer_id !== null) out.computerId = row.computer_id;
  return out;
}

export function toSessionListItem(row: SessionListItemSource, usage: SessionUsage): SessionListItemInit {
  return sessionFields(row, { created: row.created_ms, updated: row.updated_ms, completed: row.completed_ms }, usage);
}

export function toSession(row: SessionSource, usage: SessionUsage, nowMs = Date.now()): SessionInit {
  const times = { created: row.created_at.getTime(), updated: row.updated_at.getTime(), completed: row.completed_at?.getTime() ?? null };
  const out: SessionInit = sessionFields(row, times, usage);
  out.status = visibleStatus(row, nowMs);
  return out;
}

function messageFields(row: MessageRow) {
  return {
    id: row.id,
    content: row.content,
    createdAt: row.created_at.getTime(),
    updatedAt: row.updated_at.getTime(),
    ...present("parentId", row.parent_id),
    ...present("openaiMessageId", row.openai_message_id),
    ...present("openaiEncryptedContent", row.openai_encrypted_content),
    ...present("openaiReasoningId", row.openai_reasoning_id),
    ...present("openaiReasoningSummary", row.openai_reasoning_summary),
    ...present("geminiThoughtSignature", row.gemini_thought_signature),
    ...present("chatCompletionReasoningContent", row.chat_completion_reasoning_content),
    ...present("isUserVisible", row.is_user_visible),
    ...present("isError", row.is_error),
  };
}

export function toMessageListItem(row: MessageRow): MessageListItemInit {
  return messageFields(row);
}

export function toMessage(row: MessageRow): MessageInit {
  return {
    ...messageFields(row),
    role: row.role,
    ...present("userMessageSource", row.user_message_source),
    ...present("visibility", row.visibility),
    ...present("openaiPhase", row.openai_phase),
    ...present("chatCompletionReasoningField", row.chat_completion_reasoning_field),
  };
}
