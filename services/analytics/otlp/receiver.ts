// The OTLP receiver's work, whichever way an export came (OTLP/HTTP through either edge, or
// OTLP/gRPC): map each data point or log record onto our events (mapping.ts, on a worker thread
// for OTLP/HTTP bodies and binary OTLP/gRPC messages), attribute it (attribution.ts), turn cumulative sums into what each point
// adds (per-series last values in analytics_otlp_series), and store the events through the same
// validation and idempotency as TelemetryService.Ingest. What cannot be stored is rejected and
// counted, never an error: the answer is the OTLP partial success (rejected count and the
// reasons, with the names ignored).
import { sql, type Kysely, type Transaction } from "kysely";
import type { Database } from "../../database.js";
import type { Logger } from "../../platform/logger.js";
import { dayOf, EARLIEST_DATE } from "../dates.js";
import { type EventSource, type IncomingEvent, MAX_CLOCK_SKEW_MS } from "../ingest/events.js";
import { checkEvents } from "../ingest/ingest.js";
import { ensurePartitions, monthsOfInstants } from "../ingest/partitions.js";
import { supportsCopy } from "../ingest/pg-copy.js";
import { storeEvents } from "../ingest/store.js";
import { attributesOver } from "./attributes.js";
import type { Attribution, Attributor, Owner } from "./attribution.js";
import { mapMetric, type Mapped } from "./claude-code.js";
import { cumulativePointId } from "./identity.js";
import {
  type CumulativeReading,
  MAX_ITEMS_PER_EXPORT,
  type MappedExport,
  type NamedPair,
  type OnNamed,
} from "./mapping.js";

export { MAX_ITEMS_PER_EXPORT };

export interface Outcome {
  /** Data points or log records rejected (partial_success.rejected_*). */
  readonly rejected: number;
  /** partial_success.error_message: empty when everything was taken as is. */
  readonly message: string;
  /** Events stored now (retries of stored ones are not). */
  readonly stored: number;
  /** Known names not stored, with their counts, for the log. */
  readonly notStored: string;
}

/** Counts of names and reasons, for the answer's message and the log. */
class Tally {
  readonly rejected = new Map<number, string>();
  readonly unknown = new Map<string, number>();
  readonly notStored = new Map<string, number>();
  /** Items past MAX_ITEMS_PER_EXPORT, rejected unread (a count: there may be millions). */
  overCap = 0;
  stored = 0;

  reject(item: number, reason: string): void {
    if (!this.rejected.has(item)) this.rejected.set(item, reason);
  }

  outcome(noun: string): Outcome {
    const parts: string[] = [];
    if (this.overCap > 0)
      parts.push(`${this.overCap} ${noun} rejected unread: at most ${MAX_ITEMS_PER_EXPORT} ${noun} per export`);
    if (this.rejected.size > 0) {
      const reasons = new Map<string, number>();
      for (const reason of this.rejected.values()) reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
      const listed = [...reasons].slice(0, 5).map(([r, n]) => `${n} × ${r}`);
      parts.push(`${this.rejected.size} ${noun} rejected: ${listed.join("; ")}${reasons.size > 5 ? "; ..." : ""}`);
    }
    if (this.unknown.size > 0) parts.push(`ignored (unknown names, not errors): ${listNames(this.unknown)}`);
    // Names known and not stored (claude_code.active_time.total, tool_decision) are no news to
    // the exporter, and every Claude Code export has them: the server's log alone lists them.
    return {
      rejected: this.rejected.size + this.overCap,
      message: parts.join(". ").slice(0, 2000),
      stored: this.stored,
      notStored: listNames(this.notStored),
    };
  }
}

function listNames(names: Map<string, number>): string {
  const shown = [...names].slice(0, 10).map(([name, n]) => `${name.slice(0, 100)} (${n})`);
  return shown.join(", ") + (names.size > 10 ? `, and ${names.size - 10} more` : "");
}

const EARLIEST_MS = Date.parse(`${EARLIEST_DATE}T00:00:00Z`);

/** Months of the instants (Unix ms) that can be stored, for the partitions to exist before the transaction. */
function monthsOfTimes(instants: readonly number[], nowMs: number): string[] {
  return monthsOfInstants(instants.filter((ms) => ms >= EARLIEST_MS && ms <= nowMs + MAX_CLOCK_SKEW_MS));
}

/**
 * The events to store and the item (data point or log record) each came from, in two arrays
 * rather than an object per event: they live until the export's transaction ends.
 */
class Candidates {
  readonly events: IncomingEvent[] = [];
  readonly items: number[] = [];

  push(event: IncomingEvent, item: number): void {
    this.events.push(event);
    this.items.push(item);
  }

  /** The events of one item, or its rejection. */
  add(mapped: Mapped, item: number, tally: Tally): void {
    if (!mapped.ok) tally.reject(item, mapped.reason);
    else for (const event of mapped.events) this.push(event, item);
  }
}

/** Validates and stores the candidates in `trx`: rejections go to the tally by item. */
async function storeCandidates(
  trx: Transaction<Database>,
  candidates: Candidates,
  tally: Tally,
  nowMs: number,
  copy: boolean,
  source: EventSource,
): Promise<void> {
  if (candidates.events.length === 0) return;
  // The source tells the rollup which of tokens reported both ways to count (rollup/plan.ts).
  // Every owner is a user the attributor read from the organization in this request.
  const { rows, rejected } = await checkEvents(trx, candidates.events, nowMs, { source, membersKnown: true });
  for (const r of rejected) tally.reject(candidates.items[r.index]!, r.reason);
  if (rows.length > 0) tally.stored += await storeEvents(trx, rows, dayOf(nowMs), { copy });
}

interface CumulativePoint extends CumulativeReading {
  readonly item: number;
  readonly owner: Owner;
}

/**
 * The attributor's lookups of the pairs an export names, started as soon as they are known (the
 * mapping runs meanwhile). A failure is the export's, when the receiver awaits it; until then it
 * is held, not an unhandled rejection.
 */
export class Preparation {
  private started: Promise<void> | undefined;

  constructor(private readonly attributor: Attributor) {}

  start(named: readonly NamedPair[]): void {
    const emails = new Set<string>();
    const orgIds = new Set<string>();
    for (const [email, org] of named) {
      if (email !== undefined) emails.add(email);
      if (org !== undefined) orgIds.add(org);
    }
    this.started = this.attributor.prepare({ emails, orgIds });
    this.started.catch(() => {});
  }

  /** Done: the lookups of `named`, started now if they were not. */
  done(named: readonly NamedPair[]): Promise<void> {
    if (this.started === undefined) this.start(named);
    return this.started!;
  }
}

/**
 * An export the gRPC server decoded (OTLP/gRPC), mapped in this thread by `map` (mapLogs or
 * mapMetrics), its users looked up while it is mapped, then received.
 */
export async function receiveDecoded<Req>(
  db: Kysely<Database>,
  req: Req,
  map: (req: Req, orgId: string, onNamed: OnNamed) => Promise<MappedExport>,
  attributor: Attributor,
  nowMs: number,
  logger?: Logger,
): Promise<Outcome> {
  const preparation = new Preparation(attributor);
  const mapped = await map(req, attributor.orgId, (named) => preparation.start(named));
  return receiveMapped(db, mapped, attributor, nowMs, logger, preparation);
}

/**
 * A mapped export attributed and stored: each entry's named user resolved once per distinct
 * (user.email, organization.id) pair, in the export's order, so the answer's reasons are what
 * they were when attribution came first.
 */
export async function receiveMapped(
  db: Kysely<Database>,
  mapped: MappedExport,
  attributor: Attributor,
  nowMs: number,
  logger?: Logger,
  preparation = new Preparation(attributor),
): Promise<Outcome> {
  const tally = new Tally();
  const orgId = attributor.orgId;
  tally.overCap = mapped.overCap;
  for (const [name, n] of mapped.unknown) tally.unknown.set(name, n);
  for (const [name, n] of mapped.notStored) tally.notStored.set(name, n);
  await preparation.done(mapped.named);
  const attributions: Attribution[] = mapped.named.map(([email, org]) => attributor.attribute({ email, org }));

  const owners: (Owner | undefined)[] = new Array(mapped.entryItems.length);
  const times: number[] = [];
  for (let entry = 0; entry < mapped.entryItems.length; entry++) {
    const item = mapped.entryItems[entry]!;
    const named = mapped.entryNamed[entry]!;
    const reason = mapped.entryReasons[entry] ?? null;
    const attribution = named === -1 ? undefined : attributions[named]!;
    if (attribution !== undefined && !attribution.ok) tally.reject(item, attribution.reason);
    else if (reason !== null) tally.reject(item, reason);
    else if (attribution !== undefined) {
      owners[entry] = attribution.owner;
      times.push(mapped.entryTimes[entry]!);
    }
  }
  const candidates = new Candidates();
  for (let i = 0; i < mapped.events.length; i++) {
    const entry = mapped.eventEntries[i]!;
    const owner = owners[entry];
    if (owner === undefined) continue;
    const event = mapped.events[i]!;
    event.orgId = owner.orgId;
    event.userId = owner.userId;
    event.userEmail = owner.userEmail;
    candidates.push(event, mapped.entryItems[entry]!);
  }
  const cumulative: CumulativePoint[] = [];
  for (const reading of mapped.cumulative) {
    const owner = owners[reading.entry];
    if (owner !== undefined) cumulative.push({ ...reading, item: mapped.entryItems[reading.entry]!, owner });
  }

  await ensurePartitions(db, monthsOfTimes(times, nowMs));
  const copy = await supportsCopy(db);
  await db.transaction().execute(async (trx) => {
    if (cumulative.length > 0) await addCumulative(trx, orgId, cumulative, candidates, tally);
    await storeCandidates(trx, candidates, tally, nowMs, copy, mapped.source);
  });
  const kind = mapped.source === "otlp_log" ? "logs" : "metrics";
  const outcome = tally.outcome(kind === "logs" ? "log records" : "data points");
  if (outcome.message !== "")
    logger?.info({ orgId, rejected: outcome.rejected, detail: outcome.message }, `OTLP ${kind} export`);
  return outcome;
}
/**
 * What each cumulative point adds: its value less its series' last value, in time order; the
 * whole value for a series seen for the first time or started anew (another start time, or a
 * value below the last: the process restarted); nothing for a point not newer than the last one
 * (a retried export). Under a transaction-scoped lock per organization, so that two exports of
 * one series (two replicas) cannot both count the same increase; the last values are written in
 * the transaction that stores the events, so a failure leaves both as they were.
 */
async function addCumulative(
  trx: Transaction<Database>,
  orgId: string,
  points: CumulativePoint[],
  candidates: Candidates,
  tally: Tally,
): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`otlp-series:${orgId}`}, 0))`.execute(trx);
  const keys = [...new Set(points.map((p) => p.key))];
  const state = new Map<string, { start: bigint; last: bigint; value: number }>();
  for (let i = 0; i < keys.length; i += 1000) {
    const rows = await trx
      .selectFrom("analytics_otlp_series")
      .select(["series_key", "start_unix_nano", "last_unix_nano", "last_value"])
      .where("org_id", "=", orgId)
      .where("series_key", "in", keys.slice(i, i + 1000))
      .execute();
    for (const r of rows)
      state.set(r.series_key, {
        start: BigInt(r.start_unix_nano),
        last: BigInt(r.last_unix_nano),
        value: r.last_value,
      });
  }
  const changed = new Set<string>();
  points.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
  for (const p of points) {
    const s = state.get(p.key);
    let delta: number;
    if (s === undefined) delta = p.value;
    else if (p.start < s.start)
      delta = 0; // a retry from before the series started anew
    else if (p.start > s.start) delta = p.value;
    else if (p.time <= s.last) delta = 0;
    else if (p.value < s.value) delta = p.value;
    else delta = p.value - s.value;
    if (s === undefined || p.start > s.start || (p.start === s.start && p.time > s.last)) {
      state.set(p.key, { start: p.start, last: p.time, value: p.value });
      changed.add(p.key);
    }
    if (delta <= 0) continue;
    const eventId = cumulativePointId(orgId, p.key, p.start, p.time);
    const attrs = attributesOver(new Map(p.attrs), []);
    candidates.add(mapMetric(p.name, delta, { owner: p.owner, attrs, time: p.at, eventId }), p.item, tally);
  }
  const rows = [...changed].map((key) => {
    const s = state.get(key)!;
    return {
      org_id: orgId,
      series_key: key,
      start_unix_nano: String(s.start),
      last_unix_nano: String(s.last),
      last_value: s.value,
    };
  });
  for (let i = 0; i < rows.length; i += 1000)
    await trx
      .insertInto("analytics_otlp_series")
      .values(rows.slice(i, i + 1000))
      .onConflict((oc) =>
        oc.columns(["org_id", "series_key"]).doUpdateSet((eb) => ({
          start_unix_nano: eb.ref("excluded.start_unix_nano"),
          last_unix_nano: eb.ref("excluded.last_unix_nano"),
          last_value: eb.ref("excluded.last_value"),
          updated_at: sql<Date>`now()`,
        })),
      )
      .execute();
}
