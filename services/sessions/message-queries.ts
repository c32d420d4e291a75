// Repository functions for messages and their attachments.
//
// A message's seq (1, 2, 3... in its session) is assigned while the transaction holds the
// session's row lock, so messages of a session commit in seq order and a keyset on seq never
// skips a message that commits later: anything stored after a reader's position gets a higher
// seq. created_at is taken under the same lock and never goes backwards (session-queries.ts, writeTime), so
// seq order is also createdAt order.
import type { Insertable, Transaction } from "kysely";
import type { Database, Executor } from "../database.js";
import type { AttachmentRow, MessageAttachmentsTable, MessageRow, MessagesTable, MessageRole } from "./tables.js";
import { newId } from "../platform/ids.js";

/** A message to store; seq and times are assigned by insertMessages. */
export type NewMessageRow = Omit<
  Insertable<MessagesTable>,
  "id" | "org_id" | "session_id" | "seq" | "created_at" | "updated_at" | "content"
> & {
  /** Generated when absent. */
  id?: string;
  content: { text: string; id: string }[];
};

/** An attachment to store; its ID, message and position are assigned by insertAttachments. */
export type NewAttachment = Omit<Insertable<MessageAttachmentsTable>, "id" | "org_id" | "message_id" | "position">;

/**
 * Stores messages after the session's `lastSeq` (the caller holds the session row lock), all at
 * time `at`. Returns the rows in order.
 */
export async function insertMessages(
  trx: Transaction<Database>,
  session: { orgId: string; sessionId: string; lastSeq: number },
  at: Date,
  messages: readonly NewMessageRow[],
): Promise<MessageRow[]> {
  if (messages.length === 0) return [];
  return trx
    .insertInto("messages")
    .values(
      messages.map((m, i) => ({
        ...m,
        id: m.id ?? newId(),
        org_id: session.orgId,
        session_id: session.sessionId,
        seq: session.lastSeq + i + 1,
        content: JSON.stringify(m.content),
        created_at: at,
        updated_at: at,
      })),
    )
    .returningAll()
    .execute()
    .then((rows) => rows.sort((a, b) => a.seq - b.seq));
}

export async function insertAttachments(
  trx: Transaction<Database>,
  orgId: string,
  messageId: string,
  attachments: readonly NewAttachment[],
): Promise<void> {
  if (attachments.length === 0) return;
  await trx
    .insertInto("message_attachments")
    .values(
      attachments.map((a, position) => ({
        id: newId(),
        org_id: orgId,
        message_id: messageId,
        position,
        kind: a.kind,
        data: a.data,
        media_type: a.media_type ?? null,
        parsed_data: a.parsed_data ?? null,
        name: a.name ?? null,
        path: a.path ?? null,
        size: a.size,
      })),
    )
    .execute();
}

export interface MessageFilter {
  sessionId: string;
  role?: MessageRole | undefined;
  computerId?: string | undefined;
}

/** Keyset position of the messages list: the seq of the last message shown. */
export interface MessagePosition {
  seq: number;
}

export async function listMessagesPage(
  db: Executor,
  orgId: string,
  filter: MessageFilter,
  limit: number,
  after?: MessagePosition,
): Promise<MessageRow[]> {
  let q = db.selectFrom("messages").selectAll().where("org_id", "=", orgId).where("session_id", "=", filter.sessionId);
  if (filter.role !== undefined) q = q.where("role", "=", filter.role);
  if (filter.computerId !== undefined) q = q.where("computer_id", "=", filter.computerId);
  if (after) q = q.where("seq", ">", after.seq);
  return q.orderBy("seq").limit(limit).execute();
}

export async function findMessage(
  db: Executor,
  orgId: string,
  sessionId: string,
  messageId: string,
): Promise<MessageRow | undefined> {
  return db
    .selectFrom("messages")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("session_id", "=", sessionId)
    .where("id", "=", messageId)
    .executeTakeFirst();
}

/** User messages after `afterSeq`, oldest first: what a run has to answer. */
export async function userMessagesAfter(db: Executor, sessionId: string, afterSeq: number): Promise<MessageRow[]> {
  return db
    .selectFrom("messages")
    .selectAll()
    .where("session_id", "=", sessionId)
    .where("role", "=", "user")
    .where("seq", ">", afterSeq)
    .orderBy("seq")
    .execute();
}

export async function attachmentsOf(db: Executor, messageIds: readonly string[]): Promise<AttachmentRow[]> {
  if (messageIds.length === 0) return [];
  return db
    .selectFrom("message_attachments")
    .selectAll()
    .where("message_id", "in", messageIds)
    .orderBy("message_id")
    .orderBy("position")
    .execute();
}

export async function messageExists(db: Executor, sessionId: string, messageId: string): Promise<boolean> {
  const row = await db
    .selectFrom("messages")
    .select("id")
    .where("session_id", "=", sessionId)
    .where("id", "=", messageId)
    .executeTakeFirst();
  return row !== undefined;
}
