// The part of the OTLP receiver that needs no database: an export request mapped onto our events
// (claude-code.ts), each item with its ID, its time and the user.email and organization.id it
// names, but not yet attributed (attribution.ts reads the organization's users) nor stored
// (receiver.ts). Because it needs nothing but the request and the credential's organization, it
// runs on a worker thread for OTLP/HTTP bodies (mapping-pool.ts): decoding and mapping an export
// is most of the receiver's CPU, and the process's event loop serves every other request
// meanwhile. Its result is plain data, as a worker hands it back.
import type { ExportLogsServiceRequest } from "../../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import type { ExportMetricsServiceRequest } from "../../../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import type { KeyValue } from "../../../gen/opentelemetry/proto/common/v1/common_pb.js";
import { AggregationTemporality } from "../../../gen/opentelemetry/proto/metrics/v1/metrics_pb.js";
import { isoOfMs } from "../dates.js";
import type { EventSource, IncomingEvent } from "../ingest/events.js";
import { type Attributes, attributesOf, attributesOver, type Scalar, text } from "./attributes.js";
import type { Owner } from "./attribution.js";
import { LOG_EVENTS, mapLogEvent, mapMetric, METRICS, type Mapped } from "./claude-code.js";
import { deltaPointId, logRecordIds, seriesKey } from "./identity.js";

/**
 * Data points (or log records) one export may carry; the rest of a larger one are rejected
 * unread, counted in partial_success. Bounds the work and memory of one request (an export of
 * 10^6 points over gRPC, which the 32 MiB message limit admits, included).
 */
export const MAX_ITEMS_PER_EXPORT = 100_000;

/**
 * Attributes a data point may carry with its resource's. A series is named by all of them
 * (identity.ts: a canonical text of every attribute, per point), so the work per point grows with
 * them: an export of one resource with 10^5 attributes beside 10^5 points, which 4 MiB admits,
 * would be 10^10 steps. A point over the bound is rejected and counted. Claude Code's points carry
 * about ten; OpenTelemetry SDKs cut an item's attributes at 128 by default.
 */
export const MAX_SERIES_ATTRIBUTES = 256;

/**
 * Items mapped in one turn of the event loop: an export of 100,000 records is seconds of work,
 * and a process mapping it on its main thread (without threads, or an OTLP/gRPC message another
 * protocol than binary gRPC delivered decoded) serves every other request (and the
 * other exports' database answers) between turns, rather than after the whole export. On a
 * mapping thread, each turn's entries are handed over as a part (onPart): the main thread takes
 * them in while the rest is mapped, rather than all at the end.
 */
const ITEMS_PER_TURN = 200;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The owner of every event the mapping makes, until the receiver attributes its item: the fields
 * exist from the start (one hidden class for every event) and are set in place.
 */
const UNATTRIBUTED: Owner = { orgId: "", userId: "", userEmail: "" };

/** An item's user.email and organization.id attributes (`undefined`: absent). */
export type NamedPair = [email: string | undefined, org: string | undefined];

/**
 * Told the pairs an export names before its items are mapped, so that the users they name can be
 * looked up while the mapping runs (the lookup is a database round trip, the mapping milliseconds).
 */
export type OnNamed = (named: NamedPair[]) => void;

/** The distinct (user.email, organization.id) pairs of an export, each with its index. */
class NamedPairs {
  readonly list: NamedPair[] = [];
  private readonly index = new Map<string, number>();

  /** The index of the pair `attrs` names, added if new. */
  of(attrs: Attributes): number {
    const email = text(attrs, "user.email");
    const org = text(attrs, "organization.id");
    // Unambiguous: the email is counted, and each part says whether it is there.
    const key = `${email === undefined ? "-" : `+${email.length}:${email}`}${org === undefined ? "-" : `+${org}`}`;
    let at = this.index.get(key);
    if (at === undefined) {
      at = this.list.push([email, org]) - 1;
      this.index.set(key, at);
    }
    return at;
  }
}

/** A cumulative point's reading, for the receiver to turn into what it adds (receiver.ts). */
export interface CumulativeReading {
  /** Index of its entry (MappedExport.entryItems). */
  readonly entry: number;
  readonly name: string;
  readonly key: string;
  readonly start: bigint;
  readonly time: bigint;
  readonly value: number;
  readonly at: string;
  /** Its attributes, the resource's with its own over them, for the mapping of what it adds. */
  readonly attrs: [string, Scalar][];
}

/**
 * Entries of an export, in its order: every item read (past the names ignored and the cap) is an
 * entry, and the arrays named entry* are indexed by entry. An export's entries may come in
 * several parts (mapping-pool.ts hands them over as they are mapped), entries numbered across
 * all of them.
 */
export interface MappedPart {
  readonly entryItems: number[];
  /** Index into `named`; -1 for an entry rejected before attribution (entryReasons says why). */
  readonly entryNamed: number[];
  /** Why the entry is rejected if its attribution holds; null when it is not. */
  readonly entryReasons: (string | null)[];
  /** Unix ms of the entry's time; NaN when it has none. */
  readonly entryTimes: number[];
  readonly events: IncomingEvent[];
  /** The entry each event came from. */
  readonly eventEntries: number[];
  readonly cumulative: CumulativeReading[];
}

/** An export mapped, before attribution. */
export interface MappedExport extends MappedPart {
  readonly source: EventSource;
  /** Items past MAX_ITEMS_PER_EXPORT, rejected unread. */
  readonly overCap: number;
  /** Unknown names and their item counts: ignored, not errors. */
  readonly unknown: [string, number][];
  /** Known names not stored, and their item counts. */
  readonly notStored: [string, number][];
  /** The distinct user.email and organization.id pairs the entries name. */
  readonly named: NamedPair[];
}

/** Told each part of an export's entries as it is mapped; the mapped export holds the rest. */
export type OnPart = (part: MappedPart) => void;

const emptyPart = (): MappedPart => ({
  entryItems: [],
  entryNamed: [],
  entryReasons: [],
  entryTimes: [],
  events: [],
  eventEntries: [],
  cumulative: [],
});

/** The export whose entries came as `parts` and then `last`, as one. */
export function joinParts(parts: readonly MappedPart[], last: MappedExport): MappedExport {
  if (parts.length === 0) return last;
  const all = emptyPart();
  for (const part of [...parts, last])
    for (const key of Object.keys(all) as (keyof MappedPart)[]) {
      const into = all[key] as unknown[];
      for (const value of part[key]) into.push(value);
    }
  return { ...last, ...all };
}

/** Builds a MappedExport entry by entry, handing parts over on the way when asked. */
class Builder {
  readonly unknown = new Map<string, number>();
  readonly notStored = new Map<string, number>();
  overCap = 0;
  private part = emptyPart();
  /** Entries in the parts handed over. */
  private base = 0;

  constructor(
    private readonly source: EventSource,
    /** The pairs a first pass found (all of the export's), else filled as entries come. */
    private readonly named: NamedPairs = new NamedPairs(),
  ) {}

  count(known: "not_stored" | undefined, name: string, n: number): void {
    const counts = known === undefined ? this.unknown : this.notStored;
    counts.set(name, (counts.get(name) ?? 0) + n);
  }

  /** A new entry for `item`, attributed by `attrs` (or rejected before attribution: null). */
  entry(item: number, attrs: Attributes | null): number {
    const part = this.part;
    part.entryItems.push(item);
    part.entryNamed.push(attrs === null ? -1 : this.named.of(attrs));
    part.entryReasons.push(null);
    part.entryTimes.push(NaN);
    return this.base + part.entryItems.length - 1;
  }

  reject(entry: number, reason: string): void {
    this.part.entryReasons[entry - this.base] = reason;
  }

  time(entry: number, ms: number): void {
    this.part.entryTimes[entry - this.base] = ms;
  }

  /** The events of an entry, or why it is rejected. */
  add(entry: number, mapped: Mapped): void {
    if (!mapped.ok) this.reject(entry, mapped.reason);
    else
      for (const event of mapped.events) {
        this.part.events.push(event);
        this.part.eventEntries.push(entry);
      }
  }

  cumulative(reading: CumulativeReading): void {
    this.part.cumulative.push(reading);
  }

  /** The entries since the last part (between items: an entry's part is the one it was made in). */
  take(): MappedPart {
    const part = this.part;
    this.base += part.entryItems.length;
    this.part = emptyPart();
    return part;
  }

  build(): MappedExport {
    return {
      source: this.source,
      overCap: this.overCap,
      unknown: [...this.unknown],
      notStored: [...this.notStored],
      named: this.named.list,
      ...this.take(),
    };
  }
}

/** Unix ms of Unix nanoseconds; undefined for 0 (unset) and past what a Date holds. */
function msOf(nanos: bigint): number | undefined {
  if (nanos <= 0n) return undefined;
  const ms = Number(nanos / 1_000_000n);
  return Number.isFinite(ms) && ms <= 8.64e15 ? ms : undefined;
}

/** The entries (attributes, key, value) of an item's attributes over its resource's. */
function entriesOf(attrs: Attributes): [string, Scalar][] {
  const merged = new Map(attrs.shared);
  for (const [key, value] of attrs.ownEntries()) merged.set(key, value);
  return [...merged];
}

/**
 * Metrics mapped. `onNamed` is told the user.email and organization.id pairs of the export's
 * points (up to the cap) before the mapping starts; `onPart`, if given, each turn's entries.
 */
export async function mapMetrics(
  req: ExportMetricsServiceRequest,
  orgId: string,
  onNamed?: OnNamed,
  onPart?: OnPart,
): Promise<MappedExport> {
  // Each resource's attributes read once, for both passes.
  const resources = req.resourceMetrics.map((rm) => attributesOf(rm.resource?.attributes ?? []));
  const pairs = new NamedPairs();
  let read = 0;
  for (const [r, rm] of req.resourceMetrics.entries()) {
    const resource = resources[r]!;
    for (const sm of rm.scopeMetrics)
      for (const m of sm.metrics) {
        if (m.data.case === undefined) continue;
        for (const p of m.data.value.dataPoints as readonly { attributes: KeyValue[] }[])
          if (read++ < MAX_ITEMS_PER_EXPORT) pairs.of(attributesOver(resource, p.attributes));
      }
  }
  onNamed?.(pairs.list);
  const out = new Builder("otlp_metric", pairs);
  let item = -1;
  for (const [r, rm] of req.resourceMetrics.entries()) {
    const resource = resources[r]!;
    for (const sm of rm.scopeMetrics)
      for (const m of sm.metrics) {
        const points = m.data.case === undefined ? [] : m.data.value.dataPoints;
        const known = METRICS[m.name];
        // Past the cap nothing is read: the points are counted as rejected, whatever their name.
        const over = Math.max(0, item + 1 + points.length - Math.max(item + 1, MAX_ITEMS_PER_EXPORT));
        out.overCap += over;
        if (known === undefined || known === "not_stored") {
          out.count(known, m.name, points.length - over);
          item += points.length;
          continue;
        }
        if (m.data.case !== "sum") {
          for (let i = 0; i < points.length - over; i++)
            out.reject(out.entry(++item, null), `${m.name} must be a Sum, got ${m.data.case ?? "no data"}`);
          item += over;
          continue;
        }
        const temporality = m.data.value.aggregationTemporality;
        for (const p of m.data.value.dataPoints as readonly (typeof m.data.value.dataPoints)[0][]) {
          item++;
          if (item >= MAX_ITEMS_PER_EXPORT) continue; // counted in overCap above
          if (item % ITEMS_PER_TURN === ITEMS_PER_TURN - 1) {
            onPart?.(out.take());
            await nextTurn();
          }
          const attrs = attributesOver(resource, p.attributes as KeyValue[]);
          const entry = out.entry(item, attrs);
          if (resource.size + p.attributes.length > MAX_SERIES_ATTRIBUTES) {
            out.reject(
              entry,
              `attributes: a data point and its resource carry ${resource.size + p.attributes.length}, at most ${MAX_SERIES_ATTRIBUTES} name a series`,
            );
            continue;
          }
          const ms = msOf(p.timeUnixNano);
          if (ms === undefined) {
            out.reject(entry, "time_unix_nano: is required");
            continue;
          }
          const value =
            p.value.case === "asInt" ? Number(p.value.value) : p.value.case === "asDouble" ? p.value.value : NaN;
          if (!Number.isFinite(value) || value < 0) {
            out.reject(entry, "value: must be a number of at least 0");
            continue;
          }
          out.time(entry, ms);
          const at = isoOfMs(ms);
          if (temporality === AggregationTemporality.DELTA) {
            const eventId = deltaPointId(orgId, m.name, attrs, p.startTimeUnixNano, p.timeUnixNano);
            out.add(entry, mapMetric(m.name, value, { owner: UNATTRIBUTED, attrs, time: at, eventId }));
          } else if (temporality === AggregationTemporality.CUMULATIVE) {
            out.cumulative({
              entry,
              name: m.name,
              key: seriesKey(m.name, attrs),
              start: p.startTimeUnixNano,
              time: p.timeUnixNano,
              value,
              at,
              attrs: entriesOf(attrs),
            });
          } else {
            out.reject(entry, "aggregation_temporality: must be DELTA or CUMULATIVE");
          }
        }
      }
  }
  return out.build();
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

/**
 * Log records mapped. `onNamed` is told the user.email and organization.id pairs of the export's
 * records (up to the cap) before the mapping starts; `onPart`, if given, each turn's entries.
 */
export async function mapLogs(
  req: ExportLogsServiceRequest,
  orgId: string,
  onNamed?: OnNamed,
  onPart?: OnPart,
): Promise<MappedExport> {
  // Each resource's attributes read once, for both passes.
  const resources = req.resourceLogs.map((rl) => attributesOf(rl.resource?.attributes ?? []));
  const pairs = new NamedPairs();
  let read = 0;
  for (const [r, rl] of req.resourceLogs.entries()) {
    const resource = resources[r]!;
    for (const sl of rl.scopeLogs)
      for (const r of sl.logRecords)
        if (read++ < MAX_ITEMS_PER_EXPORT) pairs.of(attributesOver(resource, r.attributes));
  }
  onNamed?.(pairs.list);
  const out = new Builder("otlp_log", pairs);
  let item = -1;
  for (const [r, rl] of req.resourceLogs.entries()) {
    const resource = resources[r]!;
    for (const sl of rl.scopeLogs) {
      // The record's own fields name it, with its resource and scope: a retried export carries the same.
      const idOf = logRecordIds(orgId, rl.resource, sl.scope?.name ?? "");
      for (const record of sl.logRecords) {
        item++;
        if (item >= MAX_ITEMS_PER_EXPORT) {
          out.overCap++;
          continue;
        }
        if (item % ITEMS_PER_TURN === ITEMS_PER_TURN - 1) {
          onPart?.(out.take());
          await nextTurn();
        }
        const attrs = attributesOver(resource, record.attributes);
        const name = eventNameOf(record, attrs);
        const known = LOG_EVENTS[name];
        if (known !== "stored") {
          out.count(known, name === "" ? "(unnamed)" : name, 1);
          continue;
        }
        const entry = out.entry(item, attrs);
        const time = recordTime(record, attrs);
        if (time === undefined) {
          out.reject(entry, "time_unix_nano: is required");
          continue;
        }
        out.time(entry, time.ms);
        out.add(entry, mapLogEvent(name, { owner: UNATTRIBUTED, attrs, time: time.at, eventId: idOf(record) }));
      }
    }
  }
  return out.build();
}
