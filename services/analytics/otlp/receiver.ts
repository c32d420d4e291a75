// The OTLP receiver's work, whichever way an export came (OTLP/HTTP through either edge, or
// OTLP/gRPC): attribute each data point or log record (attribution.ts), map it onto our events
// (claude-code.ts), turn cumulative sums into what each point adds (per-series last values in
// analytics_otlp_series), and store the events through the same validation and idempotency as
// TelemetryService.Ingest. What cannot be stored is rejected and counted, never an error: the
// answer is the OTLP partial success (rejected count and the reasons, with the names ignored).
import { sql, type Kysely, type Transaction } from "kysely";
import type { ExportLogsServiceRequest } from "../../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import type { ExportMetricsServiceRequest } from "../../../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import type { KeyValue } from "../../../gen/opentelemetry/proto/common/v1/common_pb.js";
import { AggregationTemporality } from "../../../gen/opentelemetry/proto/metrics/v1/metrics_pb.js";
import type { Database } from "../../database.js";
import type { Logger } from "../../platform/logger.js";
import { dayOf, EARLIEST_DATE, isoOfMs } from "../dates.js";
import { type EventSource, type IncomingEvent, MAX_CLOCK_SKEW_MS } from "../ingest/events.js";
import { checkEvents } from "../ingest/ingest.js";
import { ensurePartitions, monthsOfInstants } from "../ingest/partitions.js";
import { supportsCopy } from "../ingest/pg-copy.js";
import { storeEvents } from "../ingest/store.js";
import { type Attributes, attributesOf, attributesOver, text } from "./attributes.js";
import type { Attributor, Owner } from "./attribution.js";
import { LOG_EVENTS, mapLogEvent, mapMetric, METRICS, type Mapped } from "./claude-code.js";
import { cumulativePointId, deltaPointId, logRecordIds, seriesKey } from "./identity.js";

/**
 * Data points (or log records) one export may carry; the rest of a larger one are rejected
 * unread, counted in partial_success. Bounds the work and memory of one request (an export of
 * 10^6 points over gRPC, which the 32 MiB message limit admits, included).
 */
export const MAX_ITEMS_PER_EXPORT = 100_000;

/**
 * Items mapped in one turn of the event loop: an export of 100,000 records is seconds of work,
 * and the process serves every other request (and the other exports' database answers) between
 * turns, rather than after the whole export.
 */
const ITEMS_PER_TURN = 200;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

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

/** Unix ms of Unix nanoseconds; undefined for 0 (unset) and past what a Date holds. */
function msOf(nanos: bigint): number | undefined {
  if (nanos <= 0n) return undefined;
  const ms = Number(nanos / 1_000_000n);
  return Number.isFinite(ms) && ms <= 8.64e15 ? ms : undefined;
}

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

  /** The events of one item, or its rejection. */
  add(mapped: Mapped, item: number, tally: Tally): void {
    if (!mapped.ok) tally.reject(item, mapped.reason);
    else
      for (const event of mapped.events) {
        this.events.push(event);
        this.items.push(item);
      }
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

interface CumulativePoint {
  readonly item: number;
  readonly name: string;
  readonly key: string;
  readonly start: bigint;
  readonly time: bigint;
  readonly value: number;
  readonly owner: Owner;
  readonly attrs: Attributes;
  readonly at: string;
}

/** The user.email and organization.id values an export names, read as attribution reads them. */
class Named {
  readonly emails = new Set<string>();
  readonly orgIds = new Set<string>();
  add(attrs: Attributes): void {
    const email = text(attrs, "user.email");
    if (email !== undefined) this.emails.add(email);
    const org = text(attrs, "organization.id");
    if (org !== undefined) this.orgIds.add(org);
  }
}

export async function receiveMetrics(
  db: Kysely<Database>,
  req: ExportMetricsServiceRequest,
  attributor: Attributor,
  nowMs: number,
  logger?: Logger,
): Promise<Outcome> {
  const tally = new Tally();
  const orgId = attributor.orgId;
  // First pass: the emails and organization IDs to resolve.
  const named = new Named();
  for (const rm of req.resourceMetrics) {
    const resource = attributesOf(rm.resource?.attributes ?? []);
    for (const sm of rm.scopeMetrics)
      for (const m of sm.metrics) {
        const points = m.data.case === undefined ? [] : m.data.value.dataPoints;
        if (METRICS[m.name] === undefined) continue;
        for (const p of points as readonly { attributes: KeyValue[] }[])
          named.add(attributesOver(resource, p.attributes));
      }
  }
  await attributor.prepare(named);

  const candidates = new Candidates();
  const cumulative: CumulativePoint[] = [];
  const times: number[] = [];
  let item = -1;
  for (const rm of req.resourceMetrics) {
    const resource = attributesOf(rm.resource?.attributes ?? []);
    for (const sm of rm.scopeMetrics)
      for (const m of sm.metrics) {
        const points = m.data.case === undefined ? [] : m.data.value.dataPoints;
        const known = METRICS[m.name];
        // Past the cap nothing is read: the points are counted as rejected, whatever their name.
        const over = Math.max(0, item + 1 + points.length - Math.max(item + 1, MAX_ITEMS_PER_EXPORT));
        if (over > 0) tally.overCap += over;
        if (known === undefined || known === "not_stored") {
          const counts = known === undefined ? tally.unknown : tally.notStored;
          counts.set(m.name, (counts.get(m.name) ?? 0) + points.length - over);
          item += points.length;
          continue;
        }
        if (m.data.case !== "sum") {
          for (let i = 0; i < points.length - over; i++)
            tally.reject(++item, `${m.name} must be a Sum, got ${m.data.case ?? "no data"}`);
          item += over;
          continue;
        }
        const temporality = m.data.value.aggregationTemporality;
        for (const p of m.data.value.dataPoints) {
          item++;
          if (item >= MAX_ITEMS_PER_EXPORT) continue; // counted in overCap above
          if (item % ITEMS_PER_TURN === ITEMS_PER_TURN - 1) await nextTurn();
          const attrs = attributesOver(resource, p.attributes);
          const attribution = attributor.attribute(attrs);
          if (!attribution.ok) {
            tally.reject(item, attribution.reason);
            continue;
          }
          const ms = msOf(p.timeUnixNano);
          if (ms === undefined) {
            tally.reject(item, "time_unix_nano: is required");
            continue;
          }
          const value =
            p.value.case === "asInt" ? Number(p.value.value) : p.value.case === "asDouble" ? p.value.value : NaN;
          if (!Number.isFinite(value) || value < 0) {
            tally.reject(item, "value: must be a number of at least 0");
            continue;
          }
          times.push(ms);
          const at = isoOfMs(ms);
          const owner = attribution.owner;
          if (temporality === AggregationTemporality.DELTA) {
            const eventId = deltaPointId(orgId, m.name, attrs, p.startTimeUnixNano, p.timeUnixNano);
            candidates.add(mapMetric(m.name, value, { owner, attrs, time: at, eventId }), item, tally);
          } else if (temporality === AggregationTemporality.CUMULATIVE) {
            const key = seriesKey(m.name, attrs);
            cumulative.push({
              item,
              name: m.name,
              key,
              start: p.startTimeUnixNano,
              time: p.timeUnixNano,
              value,
              owner,
              attrs,
              at,
            });
          } else {
            tally.reject(item, "aggregation_temporality: must be DELTA or CUMULATIVE");
          }
        }
      }
  }

  await ensurePartitions(db, monthsOfTimes(times, nowMs));
  const copy = await supportsCopy(db);
  await db.transaction().execute(async (trx) => {
    if (cumulative.length > 0) await addCumulative(trx, orgId, cumulative, candidates, tally);
    await storeCandidates(trx, candidates, tally, nowMs, copy, "otlp_metric");
  });
  const outcome = tally.outcome("data points");
  if (outcome.message !== "")
    logger?.info({ orgId, rejected: outcome.rejected, detail: outcome.message }, "OTLP metrics export");
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
    candidates.add(mapMetric(p.name, delta, { owner: p.owner, attrs: p.attrs, time: p.at, eventId }), p.item, tally);
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

type LogRecord = ExportLogsServiceRequest["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0];

/** The Claude Code event a log record is: its event_name, else its event.name attribute, else its body. */
function eventNameOf(record: LogRecord, attrs: Attributes): string {
  const name =
    record.eventName ||
    text(attrs, "event.name") ||
    (record.body?.value.case === "stringValue" ? record.body.value.value : "");
  // Claude Code's event.name attribute leaves out the prefix its record body carries.
  return name !== "" && !name.includes(".") ? `claude_code.${name}` : name;
}

/**
 * When a log record happened, in RFC 3339 and Unix ms: its time, else its event.timestamp
 * attribute (ms NaN when that is no date: validation names it), else when it was observed.
 */
function recordTime(record: LogRecord, attrs: Attributes): { at: string; ms: number } | undefined {
  const ms = msOf(record.timeUnixNano);
  if (ms !== undefined) return { at: isoOfMs(ms), ms };
  const stamp = text(attrs, "event.timestamp");
  if (stamp !== undefined) return { at: stamp, ms: Date.parse(stamp) };
  const observed = msOf(record.observedTimeUnixNano);
  return observed === undefined ? undefined : { at: isoOfMs(observed), ms: observed };
}

export async function receiveLogs(
  db: Kysely<Database>,
  req: ExportLogsServiceRequest,
  attributor: Attributor,
  nowMs: number,
  logger?: Logger,
): Promise<Outcome> {
  const tally = new Tally();
  const orgId = attributor.orgId;
  const named = new Named();
  for (const rl of req.resourceLogs) {
    const resource = attributesOf(rl.resource?.attributes ?? []);
    for (const sl of rl.scopeLogs) for (const r of sl.logRecords) named.add(attributesOver(resource, r.attributes));
  }
  await attributor.prepare(named);
  const candidates = new Candidates();
  const times: number[] = [];
  let item = -1;
  for (const rl of req.resourceLogs) {
    const resource = attributesOf(rl.resource?.attributes ?? []);
    for (const sl of rl.scopeLogs) {
      // The record's own fields name it, with its resource and scope: a retried export carries the same.
      const idOf = logRecordIds(orgId, rl.resource, sl.scope?.name ?? "");
      for (const record of sl.logRecords) {
        item++;
        if (item >= MAX_ITEMS_PER_EXPORT) {
          tally.overCap++;
          continue;
        }
        if (item % ITEMS_PER_TURN === ITEMS_PER_TURN - 1) await nextTurn();
        const attrs = attributesOver(resource, record.attributes);
        const name = eventNameOf(record, attrs);
        const known = LOG_EVENTS[name];
        if (known !== "stored") {
          const counts = known === undefined ? tally.unknown : tally.notStored;
          const label = name === "" ? "(unnamed)" : name;
          counts.set(label, (counts.get(label) ?? 0) + 1);
          continue;
        }
        const attribution = attributor.attribute(attrs);
        if (!attribution.ok) {
          tally.reject(item, attribution.reason);
          continue;
        }
        const time = recordTime(record, attrs);
        if (time === undefined) {
          tally.reject(item, "time_unix_nano: is required");
          continue;
        }
        times.push(time.ms);
        candidates.add(
          mapLogEvent(name, { owner: attribution.owner, attrs, time: time.at, eventId: idOf(record) }),
          item,
          tally,
        );
      }
    }
  }
  await ensurePartitions(db, monthsOfTimes(times, nowMs));
  const copy = await supportsCopy(db);
  await db.transaction().execute((trx) => storeCandidates(trx, candidates, tally, nowMs, copy, "otlp_log"));
  const outcome = tally.outcome("log records");
  if (outcome.message !== "")
    logger?.info({ orgId, rejected: outcome.rejected, detail: outcome.message }, "OTLP logs export");
  return outcome;
}
