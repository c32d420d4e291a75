// Rows → the response shapes of docs/interface.md §2.8 / §2.9: every mapping of the sessions area, from what
// the *-queries.ts files read. The list shapes are separate messages that simply lack the fields
// the spec leaves out of lists. A session's response also needs the token usage of its subtree
// (usage.ts), computed here from the tree read with it.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  MessageAttachmentSchema,
  MessageListItemSchema,
  MessageSchema,
  SessionListItemSchema,
  SessionSchema,
  SessionSettingsSchema,
} from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import type { SessionListRow } from "./list-queries.js";
import type { AttachmentRow, MessageRow, SessionRow, SessionStatus, StoredTokenUsage, UsageColumns } from "./tables.js";
import type { TreeMemberJson } from "./tree-queries.js";
import { computeUsage, type SessionUsage, type UsageNode } from "./usage.js";

type SessionInit = MessageInitShape<typeof SessionSchema>;
type SessionListItemInit = MessageInitShape<typeof SessionListItemSchema>;
type SettingsInit = MessageInitShape<typeof SessionSettingsSchema>;
type MessageInit = MessageInitShape<typeof MessageSchema>;
type MessageListItemInit = MessageInitShape<typeof MessageListItemSchema>;
type AttachmentInit = MessageInitShape<typeof MessageAttachmentSchema>;

const present = <K extends string, V>(key: K, value: V | null | undefined): { [P in K]?: V } =>
  (value === null || value === undefined ? {} : { [key]: value }) as { [P in K]?: V };

/** What a full session is built from. */
export type SessionSource = Pick<
  SessionRow,
  | "id"
  | "title"
  | "computer_id"
  | "message_count"
  | "settings"
  | "created_at"
  | "updated_at"
  | "completed_at"
  | "status"
  | "lease_expires_at"
>;
/** A session row that carries what its own usage node needs. */
type UsageSource = Pick<SessionRow, "id" | "parent_session_id" | "settings" | UsageColumns>;

/** The status a client sees: a run whose lease expired is waiting for a runner again. */
export function visibleStatus(row: Pick<SessionRow, "status" | "lease_expires_at">, nowMs = Date.now()): SessionStatus {
  if (row.status === "running" && row.lease_expires_at !== null && row.lease_expires_at.getTime() <= nowMs)
    return "pending";
  return row.status;
}

function ownUsageOf(row: Pick<SessionRow, UsageColumns>): StoredTokenUsage {
  return {
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    cacheCreationTokens: row.cache_creation_tokens,
    cacheReadTokens: row.cache_read_tokens,
    thinkingTokens: row.thinking_tokens,
    factoryCredits: row.factory_credits,
  };
}

function usageNodeOf(row: UsageSource): UsageNode {
  return {
    id: row.id,
    parentId: row.parent_session_id,
    own: ownUsageOf(row),
    reported: row.settings.childInclusiveTokenUsageBySessionId ?? {},
  };
}

export function usageNodesOfJson(members: readonly TreeMemberJson[] | null): UsageNode[] {
  if (members === null) return [];
  return members.map(
    ([
      id,
      parentId,
      inputTokens,
      outputTokens,
      cacheCreationTokens,
      cacheReadTokens,
      thinkingTokens,
      factoryCredits,
      reported,
    ]) => ({
      id,
      parentId,
      own: { inputTokens, outputTokens, cacheCreationTokens, cacheReadTokens, thinkingTokens, factoryCredits },
      reported: reported ?? {},
    }),
  );
}

/** Usage of each of `rows`, given the rest of their trees; the rows' own copies win (e.g. just written). */
function usageWithTrees(rows: readonly UsageSource[], others: readonly UsageNode[]): Map<string, SessionUsage> {
  const nodes = new Map<string, UsageNode>();
  for (const n of others) nodes.set(n.id, n);
  for (const r of rows) nodes.set(r.id, usageNodeOf(r));
  return computeUsage([...nodes.values()]);
}

/** A session's token usage, given the other members of its tree (tree-queries.ts). */
export function usageOf(row: UsageSource, tree: readonly TreeMemberJson[] | null): SessionUsage {
  return usageWithTrees([row], usageNodesOfJson(tree)).get(row.id)!;
}

// The builders below assign optional fields one by one instead of spreading a fresh object per
// field: a list of 100 sessions builds thousands of these (issue #9 profile: 8% of a list request).

function toSessionSettings(row: Pick<SessionRow, "settings">, usage: SessionUsage): SettingsInit {
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

function toSessionListItem(row: SessionListRow, usage: SessionUsage): SessionListItemInit {
  return sessionFields(row, { created: row.created_ms, updated: row.updated_ms, completed: row.completed_ms }, usage);
}

function toSession(row: SessionSource, usage: SessionUsage, nowMs = Date.now()): SessionInit {
  const times = {
    created: row.created_at.getTime(),
    updated: row.updated_at.getTime(),
    completed: row.completed_at?.getTime() ?? null,
  };
  const out: SessionInit = sessionFields(row, times, usage);
  out.status = visibleStatus(row, nowMs);
  return out;
}

/** A session's response; `tree` holds the other members of its tree (findSessionWithTree, treeOf). */
export function sessionView(row: SessionSource & UsageSource, tree: readonly TreeMemberJson[] | null): SessionInit {
  return toSession(row, usageOf(row, tree));
}

/** List items; the page's rows carry their trees (listSessionsPage). */
export function sessionListView(rows: readonly SessionListRow[]): SessionListItemInit[] {
  const others: UsageNode[] = [];
  for (const row of rows) others.push(...usageNodesOfJson(row.tree));
  const usage = usageWithTrees(rows, others);
  return rows.map((row) => toSessionListItem(row, usage.get(row.id)!));
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

/** An attachment handed to a runner with the messages it claimed. */
export function toAttachment(row: AttachmentRow): AttachmentInit {
  return {
    messageId: row.message_id,
    kind: row.kind,
    data: row.data,
    mediaType: row.media_type ?? "",
    parsedData: row.parsed_data ?? "",
    name: row.name ?? "",
    path: row.path ?? "",
  };
}
