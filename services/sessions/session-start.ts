// A new session: its row and its session_start event, in one transaction. The runner's
// CreateSession (for a user it names) and the public CreateSession (for the caller) both start
// sessions here, so the checks of reported children and the event are the same for both.
import type { Transaction } from "kysely";
import type { Database } from "../database.js";
import { newId } from "../platform/ids.js";
import { changeEvents, insertSessionEvents } from "./event-queries.js";
import type { TelemetrySink } from "../platform/telemetry.js";
import { insertSession, findSessionsAmong, lockedNow, type NewSession } from "./session-queries.js";
import { refuseHeldSessions } from "./settings.js";
import type { SessionRow } from "./tables.js";
import { sessionStartEvent } from "./telemetry-events.js";
import { storeUserMessage, type UserMessage } from "./user-message.js";

/**
 * Inserts the session (idle) and records its start. With `first`, the session starts with that
 * user message and is pending.
 */
export async function startSession(
  trx: Transaction<Database>,
  telemetry: TelemetrySink,
  init: Omit<NewSession, "createdAt">,
  first?: Omit<UserMessage, "computerId">,
): Promise<SessionRow> {
  const id = init.id ?? newId();
  const reported = init.settings.childInclusiveTokenUsageBySessionId;
  refuseHeldSessions(id, reported, await findSessionsAmong(trx, init.orgId, Object.keys(reported ?? {})));
  const createdAt = await lockedNow(trx);
  // The event first: for a child, insertSession's foreign-key check share-locks the parent's
  // row until commit, and every write to the parent (lockSession: FOR UPDATE) waits for that;
  // nothing that may wait on another lock (a new analytics partition) should run while holding it.
  await telemetry.record(
    [
      sessionStartEvent({
        id,
        org_id: init.orgId,
        user_id: init.userId,
        client: init.client,
        autonomy_mode: init.autonomyMode,
        created_at: createdAt,
      }),
    ],
    trx,
  );
  if (first === undefined) return insertSession(trx, { ...init, id, createdAt });
  const session = await insertSession(trx, { ...init, id, createdAt });
  // The message goes to the session's computer, as a posted one does by default.
  const stored = await storeUserMessage(trx, telemetry, session, createdAt, {
    ...first,
    computerId: init.computerId,
  });
  // Written directly rather than through touchSession: the session is new in this transaction,
  // so it has no earlier list position to record. Its events are the same as a post's.
  const lastEventSeq = await insertSessionEvents(trx, session, createdAt, changeEvents("idle", "pending", stored));
  return trx
    .updateTable("sessions")
    .set({ status: "pending", pending_since: createdAt, message_count: stored.length, last_event_seq: lastEventSeq })
    .where("id", "=", id)
    .returningAll()
    .executeTakeFirstOrThrow();
}
