// What names an OTLP item, so that a retried export is stored once: the event IDs of log records
// and data points, and the keys of cumulative series. Each is the SHA-256 of a canonical text of
// what was decoded, so it does not depend on the encoding (protobuf or JSON) or on the path
// (OTLP/HTTP or OTLP/gRPC) the item came by, and it is computed without re-encoding anything: a
// log record's protobuf re-encoding and a hash object per item cost more than the rest of the
// receiver together.
import { hash } from "node:crypto";
import type { AnyValue, KeyValue } from "../../../gen/opentelemetry/proto/common/v1/common_pb.js";
import type { LogRecord } from "../../../gen/opentelemetry/proto/logs/v1/logs_pb.js";
import type { Resource } from "../../../gen/opentelemetry/proto/resource/v1/resource_pb.js";
import type { Attributes, Scalar } from "./attributes.js";

/**
 * The first 40 hex digits of the SHA-256 of `parts`: the parts of an ID each followed by a NUL,
 * hashed in one call with no hash object (it runs once per data point or log record). The parts
 * never hold a NUL of their own where it could join two of them ambiguously: the texts below
 * quote or count every string.
 */
function digest(parts: string): string {
  return hash("sha256", parts, "hex").slice(0, 40);
}

/**
 * An item's event ID: `otlp:`, its time in microseconds as 14 hex digits (fixed width, so the
 * text sorts as the time does; 0 for an item without one), `:`, then 26 hex digits (104 bits) of
 * the SHA-256 of `parts`. The time comes first for the claims' index (analytics_event_ids, keyed
 * by event_id): the items arriving now have the latest times, so their claims land together at
 * the index's right end, in pages already in memory, rather than each in a page of its own
 * anywhere in the index, as a hash alone placed them (Postgres takes a third less time over
 * 1,000 claims: BENCHMARKS.md, issue 21's fourth pass). The hash tells apart the items of one
 * microsecond.
 */
function eventId(timeUnixNano: bigint, parts: string): string {
  const micros = (timeUnixNano / 1000n).toString(16).padStart(14, "0");
  return `otlp:${micros}:${hash("sha256", parts, "hex").slice(0, 26)}`;
}

/** Text JSON.stringify would print without escapes: printable ASCII, no quote or backslash. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** JSON.stringify(text), without its cost for the plain text attribute keys and values mostly are. */
function quote(text: string): string {
  return PLAIN.test(text) ? `"${text}"` : JSON.stringify(text);
}

/** One attribute in a series' canonical text: `["key","value"]`, `["n",5]`. */
const piece = (key: string, value: Scalar) =>
  `[${quote(key)},${typeof value === "string" ? quote(value) : JSON.stringify(value)}]`;

const byKey = ([a]: [string, Scalar], [b]: [string, Scalar]) => (a < b ? -1 : a > b ? 1 : 0);

/** A resource's attributes sorted by key, and their pieces: made once per resource, for all its points. */
const sharedPieces = new WeakMap<ReadonlyMap<string, Scalar>, { keys: string[]; pieces: string[] }>();

function piecesOf(shared: ReadonlyMap<string, Scalar>): { keys: string[]; pieces: string[] } {
  let made = sharedPieces.get(shared);
  if (made === undefined) {
    const entries = [...shared.entries()].sort(byKey);
    made = { keys: entries.map(([key]) => key), pieces: entries.map(([key, value]) => piece(key, value)) };
    sharedPieces.set(shared, made);
  }
  return made;
}

/**
 * The attributes sorted by key, as JSON: `[["key","value"],["n",5]]`. What names a metric series.
 * Written out, the resource's part once for all its points, rather than JSON.stringify'd from a
 * sorted copy of the entries; the text is the same, so that the series keys stored by earlier
 * versions still match.
 */
export function canonical(attrs: Attributes): string {
  const shared = piecesOf(attrs.shared);
  const own = attrs.ownEntries();
  if (own.length > 1) own.sort(byKey);
  const parts: string[] = [];
  let i = 0;
  let j = 0;
  while (i < shared.keys.length || j < own.length) {
    const sharedKey = shared.keys[i];
    const ownEntry = own[j];
    if (ownEntry === undefined || (sharedKey !== undefined && sharedKey < ownEntry[0])) {
      parts.push(shared.pieces[i++]!);
      continue;
    }
    parts.push(piece(ownEntry[0], ownEntry[1]));
    if (sharedKey === ownEntry[0]) i++; // the item's own value over the resource's
    j++;
  }
  return `[${parts.join(",")}]`;
}

/**
 * A string in a log record's text: its length, then itself. Unambiguous with nothing to escape
 * or scan, unlike quoting (the series keys' canonical text above must stay JSON).
 */
const counted = (text: string) => `${text.length}:${text}`;

/** An AnyValue in a log record's text: its type named by a one-letter tag, strings counted. */
function valueText(value: AnyValue | undefined): string {
  const v = value?.value;
  switch (v?.case) {
    case "stringValue":
      return `s${counted(v.value)}`;
    case "boolValue":
      return v.value ? "t" : "f";
    case "intValue":
      return `i${v.value}`;
    case "doubleValue":
      return `d${v.value}`;
    case "bytesValue":
      return `b${Buffer.from(v.value.buffer, v.value.byteOffset, v.value.byteLength).toString("base64")}`;
    case "arrayValue":
      return `a[${v.value.values.map(valueText).join(",")}]`;
    case "kvlistValue":
      return `k${attributesText(v.value.values)}`;
    default:
      return "n";
  }
}

/** KeyValues in the order sent (a retry sends them in the same order). */
function attributesText(kvs: readonly KeyValue[]): string {
  let text = "{";
  for (let i = 0; i < kvs.length; i++) {
    const kv = kvs[i]!;
    if (i > 0) text += ",";
    text += `${counted(kv.key)}=${valueText(kv.value)}`;
  }
  return `${text}}`;
}

const hex = (bytes: Uint8Array) =>
  bytes.length === 0 ? "" : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");

/** The key of a cumulative series of `metric`: what analytics_otlp_series stores its last value under. */
export function seriesKey(metric: string, attrs: Attributes): string {
  return digest(`${metric}\0${canonical(attrs)}\0`);
}

/** The event ID of a cumulative point: what it adds to its series from start to time (Unix ns). */
export function cumulativePointId(orgId: string, series: string, start: bigint, time: bigint): string {
  return eventId(time, `${orgId}\0${series}\0${start}\0${time}\0`);
}

/** The event ID of a delta point of `metric`. */
export function deltaPointId(orgId: string, metric: string, attrs: Attributes, start: bigint, time: bigint): string {
  return eventId(time, `${orgId}\0${metric}\0${canonical(attrs)}\0${start}\0${time}\0`);
}

/**
 * The event IDs of one scope's log records: the organization, the resource (its digest, once
 * for all its records) and the scope's name, then every field of the record.
 */
export function logRecordIds(
  orgId: string,
  resource: Resource | undefined,
  scope: string,
): (record: LogRecord) => string {
  const prefix = `${orgId}\0${resourceDigest(resource)}\0${counted(scope)}\0`;
  return (record) => eventId(record.timeUnixNano || record.observedTimeUnixNano, `${prefix}${logRecordText(record)}\0`);
}

/**
 * A resource's digest, made once per resource however many scopes it has: an export may hold a
 * resource of 10^5 attributes beside 10^5 scopes, and hashing it per scope would hold the process
 * for minutes.
 */
const resourceDigests = new WeakMap<Resource, string>();

function resourceDigest(resource: Resource | undefined): string {
  if (resource === undefined) return digest("");
  let made = resourceDigests.get(resource);
  if (made === undefined) resourceDigests.set(resource, (made = digest(resourceText(resource))));
  return made;
}

/** A resource as text: its attributes. */
function resourceText(resource: Resource | undefined): string {
  return resource === undefined ? "" : `${attributesText(resource.attributes)}${resource.droppedAttributesCount}`;
}

/** Every field of a log record, in field-number order, as text. */
function logRecordText(r: LogRecord): string {
  return `${r.timeUnixNano}|${r.severityNumber}|${counted(r.severityText)}|${valueText(r.body)}|${attributesText(r.attributes)}|${r.droppedAttributesCount}|${r.flags}|${hex(r.traceId)}|${hex(r.spanId)}|${r.observedTimeUnixNano}|${counted(r.eventName)}`;
}
