// Table types of the sessions area: sessions, their messages and attachments, the list history
// that (with each session's list_xid) makes session paging a stable snapshot (list-queries.ts),
// and stored Idempotency-Keys. The list clock is no longer used (migration 0009); its table stays
// for the previous release during a rollout.
import type { ColumnType, Selectable } from "kysely";

// Optional on insert where the column has a default (now()).
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
type Json<T> = ColumnType<T, string | undefined, string>;
type Counter = ColumnType<number, number | undefined, number>;

export type SessionStatus = "idle" | "pending" | "running";

/** The request-side fields of sessionSettings (docs/interface.md §2.8) as stored, JSON names. */
export interface StoredSettings {
  model?: string;
  specModeModel?: string;
  providerLockTimestamp?: string;
  assistantActiveTimeMs?: number;
  /** Usage of children the client reported (sessions this service does not hold). */
  childInclusiveTokenUsageBySessionId?: Record<string, StoredTokenUsage>;
  archivedAt?: string;
  tags?: { name: string; metadata?: Record<string, unknown> }[];
  enabledToolIds?: string[];
  disabledToolIds?: string[];
}

export interface StoredTokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheCreationTokens: number;
  cacheReadTokens: number;
  thinkingTokens: number;
  factoryCredits: number;
}

export interface SessionsTable {
  id: string;
  org_id: string;
  /** The user who owns the session. */
  user_id: string;
  parent_session_id: string | null;
  /** The top-level session of this session's tree (its own ID when it has no parent); never changes. */
  root_id: ColumnType<string, string, never>;
  title: string | null;
  computer_id: string | null;
  status: SessionStatus;
  /** Every stored message; also the sequence number of the newest one (there are no deletes). */
  message_count: Counter;
  settings: Json<StoredSettings>;
  // The session's own token usage (children roll up at read time).
  input_tokens: Counter;
  output_tokens: Counter;
  cache_creation_tokens: Counter;
  cache_read_tokens: Counter;
  thinking_tokens: Counter;
  factory_credits: Counter;
  /** Telemetry: terminal-ui, web or non-interactive-cli. */
  client: string;
  /** Telemetry: auto-high, auto-medium, auto-low, spec or manual. */
  autonomy_mode: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  completed_at: NullableTimestamp;
  /** The transaction that last moved the session in the list (Postgres xid8, as text); see list-queries.ts. */
  list_xid: ColumnType<string, string | undefined, string>;
  /** Superseded by list_xid (migration 0009); kept for the previous release, never written (defaults to 0). */
  list_version: ColumnType<number, never, never>;
  /** When the session last became pending: runners claim the longest-waiting first. */
  pending_since: NullableTimestamp;
  lease_token: string | null;
  lease_owner: string | null;
  lease_expires_at: NullableTimestamp;
  /** message_count when the current (or last) run claimed the session. */
  claimed_seq: Counter;
  /** User messages up to this sequence number were answered by a finished run. */
  handled_seq: Counter;
  /** The number of the session's last event (session_events.seq); 0 before the first. */
  last_event_seq: Counter;
}

export type SessionEventType = "session.status_changed" | "message.created";

/** What an event says beyond its type and time, JSON names as the event stream prints them. */
export type SessionEventData =
  | { status: SessionStatus; previousStatus: SessionStatus }
  | { messageId: string; role: string };

/** A session's events, numbered within the session (migration 0017). */
export interface SessionEventsTable {
  session_id: string;
  seq: number;
  org_id: string;
  type: SessionEventType;
  created_at: Timestamp;
  data: Json<SessionEventData>;
}

/** Superseded by transaction IDs (migration 0009); kept for the previous release, never written. */
export interface SessionListClocksTable {
  org_id: string;
  version: number;
}

export interface SessionListHistoryTable {
  org_id: string;
  session_id: string;
  /** The list position a session had before a change replaced it, and the transaction that gave it that position... */
  old_updated_at: Timestamp;
  old_xid: string;
  /** ...and the transaction of the change (xid8s, as text). */
  new_xid: ColumnType<string, string | undefined, string>;
  /** Superseded by old_xid/new_xid (migration 0009); kept for the previous release, never written. */
  old_version: ColumnType<number | null, never, never>;
  new_version: ColumnType<number | null, never, never>;
  superseded_at: Timestamp;
}

export type MessageRole = "user" | "assistant" | "tool" | "system";

export interface ContentBlockRow {
  text: string;
  id: string;
}

export interface MessagesTable {
  id: string;
  org_id: string;
  session_id: string;
  /** 1, 2, 3... within the session, assigned under the session's row lock: the list order. */
  seq: number;
  role: MessageRole;
  content: Json<ContentBlockRow[]>;
  created_at: Timestamp;
  updated_at: Timestamp;
  parent_id: string | null;
  user_message_source: string | null;
  visibility: string | null;
  openai_message_id: string | null;
  openai_phase: string | null;
  openai_encrypted_content: string | null;
  openai_reasoning_id: string | null;
  openai_reasoning_summary: string | null;
  gemini_thought_signature: string | null;
  chat_completion_reasoning_field: string | null;
  chat_completion_reasoning_content: string | null;
  is_user_visible: boolean | null;
  is_error: boolean | null;
  /** The computer the message was sent to (defaults to the session's). */
  computer_id: string | null;
  /** The user who posted a user message; null for runner messages. */
  author_user_id: string | null;
}

export interface MessageAttachmentsTable {
  id: string;
  org_id: string;
  message_id: string;
  position: number;
  kind: "image" | "file";
  /** Base64 image data, or the file's data as sent. */
  data: string;
  /** Images: image/png, image/jpeg, image/gif or image/webp, from the image's own bytes. */
  media_type: string | null;
  parsed_data: string | null;
  name: string | null;
  path: string | null;
  /** Decoded bytes (images) or characters (files): what the size limits count. */
  size: number;
}

export interface IdempotencyKeysTable {
  org_id: string;
  credential_id: string;
  key: string;
  /**
   * SHA-256 of the request (what it asks for: the session and body of a message, or the body of
   * a new session): a reuse with another request is a 409.
   */
  request_hash: string;
  /** The first result, returned again to a retry: a posted message's, or the created session's ID. */
  response: Json<{ messageId: string; status: string } | { sessionId: string }>;
  created_at: Timestamp;
}

export interface SessionTables {
  sessions: SessionsTable;
  session_list_clocks: SessionListClocksTable;
  session_list_history: SessionListHistoryTable;
  messages: MessagesTable;
  message_attachments: MessageAttachmentsTable;
  idempotency_keys: IdempotencyKeysTable;
  session_events: SessionEventsTable;
}

// Rows as kysely reads them. The area's row types are these (or a Pick of one), so a column's
// type is written once, in its table above.
export type SessionRow = Selectable<SessionsTable>;
export type MessageRow = Selectable<MessagesTable>;
export type AttachmentRow = Selectable<MessageAttachmentsTable>;
export type SessionEventRow = Selectable<SessionEventsTable>;

/** The session's own token usage, one column per counter. */
export type UsageColumns =
  | "input_tokens"
  | "output_tokens"
  | "cache_creation_tokens"
  | "cache_read_tokens"
  | "thinking_tokens"
  | "factory_credits";
