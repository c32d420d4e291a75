// Ingest of a batch of telemetry events (TelemetryService.Ingest, `agentplane ingest`): each
// event is validated on its own and rejected with its index and reason; the valid ones whose
// user belongs to their organization are stored in one transaction. Partial acceptance:
// rejections never block the rest of the batch.
import type { Kysely } from "kysely";
import type { Database, Executor } from "../../database.js";
import { dayOf } from "../dates.js";
import { validateEvent, type EventRow, type IncomingEvent, type ValidateOptions } from "./events.js";
import { ensurePartitions, monthsOf } from "./partitions.js";
import { supportsCopy } from "./pg-copy.js";
import { findMemberships, membershipKey, storeEvents } from "./store.js";

export interface Rejection {
  /** 0-based index of the event in the batch. */
  index: number;
  reason: string;
}

export interface IngestResult {
  /** Events stored now. */
  accepted: number;
  /** Valid events whose (org_id, event_id) was already stored (or repeated within the batch). */
  duplicates: number;
  rejected: Rejection[];
}

export const notMemberReason = (row: Pick<EventRow, "orgId" | "userId">) =>
  `user_id: user "${row.userId}" does not belong to organization "${row.orgId}"`;

export interface CheckOptions extends ValidateOptions {
  /**
   * Every event's user was read from its organization's users moments ago, by the caller (the
   * OTLP receiver attributes each record to a user it looked up in the organization): the
   * membership query would only repeat that lookup.
   */
  membersKnown?: boolean;
}

/** Validation plus the membership check; the rows to store and the rejections, by index. */
export async function checkEvents(
  db: Executor,
  events: readonly IncomingEvent[],
  nowMs: number,
  options: CheckOptions = {},
): Promise<{ rows: EventRow[]; rejected: Rejection[] }> {
  const rejected: Rejection[] = [];
  const candidates: Array<{ index: number; row: EventRow }> = [];
  events.forEach((event, index) => {
    const v = validateEvent(event, nowMs, options);
    if (v.ok) candidates.push({ index, row: v.row });
    else rejected.push({ index, reason: v.reason });
  });
  if (options.membersKnown) return { rows: candidates.map((c) => c.row), rejected };
  // A batch holds runs of one user's events: the key is built once per run, not per event.
  const pairs = new Map<string, [string, string]>();
  let lastOrg: string | null = null;
  let lastUser: string | null = null;
  for (const { row } of candidates) {
    if (row.orgId === lastOrg && row.userId === lastUser) continue;
    lastOrg = row.orgId;
    lastUser = row.userId;
    pairs.set(membershipKey(lastOrg, lastUser), [lastOrg, lastUser]);
  }
  const members = await findMemberships(db, [...pairs.values()]);
  const rows: EventRow[] = [];
  lastOrg = lastUser = null;
  let member = false;
  for (const { index, row } of candidates) {
    if (row.orgId !== lastOrg || row.userId !== lastUser) {
      lastOrg = row.orgId;
      lastUser = row.userId;
      member = members.has(membershipKey(lastOrg, lastUser));
    }
    if (member) rows.push(row);
    else rejected.push({ index, reason: notMemberReason(row) });
  }
  rejected.sort((a, b) => a.index - b.index);
  return { rows, rejected };
}

/** Validates, member-checks and stores a batch; `options.source` marks where it came from (native by default). */
export async function ingestEvents(
  db: Kysely<Database>,
  events: readonly IncomingEvent[],
  nowMs = Date.now(),
  options: ValidateOptions = {},
): Promise<IngestResult> {
  const { rows, rejected } = await checkEvents(db, events, nowMs, options);
  if (rows.length === 0) return { accepted: 0, duplicates: 0, rejected };
  await ensurePartitions(db, monthsOf(rows));
  const today = dayOf(nowMs);
  const copy = await supportsCopy(db);
  const accepted = await db.transaction().execute((trx) => storeEvents(trx, rows, today, { copy }));
  return { accepted, duplicates: rows.length - accepted, rejected };
}
