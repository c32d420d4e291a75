// A user message as the public API stores it: the message row, its images and files, and its
// telemetry event, in the transaction that holds its session's row lock (or created the session).
// PostMessage and CreateSession's first message both store theirs here.
import type { Transaction } from "kysely";
import { shareComputer } from "../computers/queries.js";
import type { Database } from "../database.js";
import { invalidArgument } from "../platform/errors.js";
import { newId } from "../platform/ids.js";
import type { TelemetrySink } from "../platform/telemetry.js";
import type { CheckedFile, CheckedImage } from "./attachments.js";
import { insertAttachments, insertMessages } from "./message-queries.js";
import type { MessageRow, SessionRow } from "./tables.js";
import { messageEvents } from "./telemetry-events.js";

export interface UserMessage {
  id: string;
  text: string;
  /** The computer it is sent to (null: none). */
  computerId: string | null;
  authorUserId: string;
  images: readonly CheckedImage[];
  files: readonly CheckedFile[];
}

/**
 * A computer a request names must be one of the caller's organization. Another organization's
 * gets the same answer as an ID that exists nowhere. The computer cannot be deleted until the
 * transaction ends (DeleteComputer waits), so a session never names a computer deleted meanwhile.
 */
export async function requireOrgComputer(
  trx: Transaction<Database>,
  orgId: string,
  computerId: string | undefined,
): Promise<void> {
  if (computerId !== undefined && !(await shareComputer(trx, orgId, computerId))) {
    throw invalidArgument(
      "computerId",
      `no computer with ID ${JSON.stringify(computerId.slice(0, 60))} in your organization`,
    );
  }
}

/** Stores the message after the session's last one, at `at`; the caller then touches the session. */
export async function storeUserMessage(
  trx: Transaction<Database>,
  telemetry: TelemetrySink,
  session: SessionRow,
  at: Date,
  message: UserMessage,
): Promise<MessageRow[]> {
  const stored = await insertMessages(
    trx,
    { orgId: session.org_id, sessionId: session.id, lastSeq: session.message_count },
    at,
    [
      {
        id: message.id,
        role: "user",
        content: [{ text: message.text, id: newId() }],
        user_message_source: "sessions_api",
        computer_id: message.computerId,
        author_user_id: message.authorUserId,
      },
    ],
  );
  await insertAttachments(trx, session.org_id, message.id, [
    ...message.images.map((i) => ({
      kind: "image" as const,
      data: i.data,
      media_type: i.mediaType,
      size: i.size,
    })),
    ...message.files.map((f) => ({
      kind: "file" as const,
      data: f.data,
      parsed_data: f.parsedData,
      name: f.name,
      path: f.path,
      size: f.size,
    })),
  ]);
  await telemetry.record(messageEvents(session, stored), trx);
  return stored;
}
