// Exports of the analytics endpoints (`format=csv`, `format=ndjson`; README.md "Exports"): the
// rows the JSON envelope's `data` would hold, one per line, streamed as HttpBody chunks.
//
// - Columns come from the typed row message of the answer (TokensRow, ToolsGroupRow, UserDayRow,
//   ...; analytics.proto), so an endpoint's export needs no list of its own: scalar fields are
//   columns under their JSON names, fields of a nested message are columns under dotted names
//   (`tool_autonomy_level_ratio.auto_high`), and breakdowns (repeated fields, maps) are one cell
//   holding their JSON, so a CSV row carries everything its JSON row does.
// - CSV is RFC 4180: one header row, CRLF after every record, a field quoted when it holds a
//   comma, a quote, CR or LF (quotes doubled), UTF-8. Values are written as they are: a cell is
//   never altered to defuse spreadsheet formulas, since that would change the data.
// - The body is produced a piece at a time (a batch of rows read, written, sent) and compressed
//   as it goes when the client takes a coding: a large export is never held whole here, nor by
//   either edge (http-body-stream.ts, Envoy's transcoder).
import type { DescField, DescMessage, JsonObject, JsonValue, MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import type { HttpBodySchema } from "../../../gen/google/api/httpbody_pb.js";
import { stopIfAbandoned } from "../../platform/abandoned.js";
import { StreamingEncoder, type ContentCoding } from "../../platform/deflate-parts.js";
import { invalidArgument } from "../../platform/errors.js";
import type { DayRange } from "../dates.js";
import { HTTP_BODY_CHUNK_BYTES } from "../../platform/body-chunks.js";
import { COMPRESSOR_MIN_CONTENT_LENGTH } from "../../platform/compressor.js";

/** How a REST answer is written: the JSON envelope, or an export of its rows. */
export type AnswerFormat = "json" | "csv" | "ndjson";
export type ExportFormat = Exclude<AnswerFormat, "json">;

const FORMATS: readonly AnswerFormat[] = ["json", "csv", "ndjson"];

/** The `format` parameter: empty means JSON. Anything else unknown is a 400 naming the field. */
export function parseFormat(value: string): AnswerFormat {
  if (value === "") return "json";
  const format = FORMATS.find((f) => f === value);
  if (format === undefined)
    throw invalidArgument("format", `must be "json", "csv" or "ndjson", got "${value.slice(0, 40)}"`);
  return format;
}

/**
 * The answer's format. The Stream* methods (the REST routes) write any of them; the typed Get*
 * methods answer messages, so there anything but JSON is a 400 naming the Stream* method.
 */
export function answerFormat(ctx: HandlerContext, value: string): AnswerFormat {
  const format = parseFormat(value);
  if (format !== "json" && ctx.method.methodKind !== "server_streaming") {
    const stream = ctx.method.name.replace(/^Get/, "Stream");
    throw invalidArgument(
      "format",
      `"${format}" is served by ${stream} (the REST route); ${ctx.method.name} answers messages`,
    );
  }
  return format;
}

export const CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: "text/csv; charset=utf-8; header=present",
  ndjson: "application/x-ndjson",
};

/**
 * The Content-Disposition of an export: an attachment whose name says what it holds, e.g.
 * `agentplane-tools-by-tool_name-2026-03-01-to-2026-03-31.csv`. Every part is a constant or a
 * validated date, so the name needs no quoting beyond its quotes.
 */
export function contentDisposition(endpoint: string, groupBy: string, range: DayRange, format: ExportFormat): string {
  const grouped = groupBy === "" ? "" : `-by-${groupBy}`;
  return `attachment; filename="agentplane-${endpoint}${grouped}-${range.start}-to-${range.end}.${format}"`;
}

/** One CSV column: its header and where its value sits in a JSON row. */
export interface Column {
  readonly name: string;
  readonly path: readonly string[];
}

/** Well-known types that print as a JSON value of their own rather than as an object of fields. */
const JSON_VALUED = new Set(["google.protobuf.Value", "google.protobuf.Struct", "google.protobuf.ListValue"]);

/** The CSV columns of a row message, in field order (see the file comment). */
export function columnsOf(schema: DescMessage): Column[] {
  const columns: Column[] = [];
  const walk = (message: DescMessage, path: readonly string[]) => {
    for (const field of message.fields) {
      const at = [...path, field.jsonName];
      if (isNested(field)) walk(field.message, at);
      else columns.push({ name: at.join("."), path: at });
    }
  };
  walk(schema, []);
  return columns;
}

function isNested(field: DescField): field is DescField & { fieldKind: "message"; message: DescMessage } {
  return field.fieldKind === "message" && !JSON_VALUED.has(field.message.typeName);
}

/** A field as RFC 4180 writes it: quoted (quotes doubled) when it holds a comma, quote, CR or LF. */
export function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One record with its CRLF. */
export function csvRecord(fields: readonly string[]): string {
  return `${fields.map(csvField).join(",")}\r\n`;
}

/**
 * A cell as written: strings as they are, null or absent empty, numbers and breakdowns as JSON
 * (a number's JSON is its String(), which never needs quotes).
 */
function csvCell(value: JsonValue | undefined): string {
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return csvField(value);
  if (value === undefined || value === null) return "";
  return csvField(JSON.stringify(value));
}

function valueAt(row: JsonObject, path: readonly string[]): JsonValue | undefined {
  let value: JsonValue | undefined = row;
  for (const key of path) {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
    value = value[key];
  }
  return value;
}

/** Writes rows in one export format: a header (CSV), then a line per row. */
export class RowWriter {
  private readonly columns: Column[];

  constructor(
    readonly format: ExportFormat,
    rowSchema: DescMessage,
  ) {
    this.columns = columnsOf(rowSchema);
  }

  /** What precedes the rows: the CSV header row, even when no row follows. */
  header(): string {
    return this.format === "csv" ? csvRecord(this.columns.map((c) => c.name)) : "";
  }

  row(row: JsonObject): string {
    if (this.format === "ndjson") return `${JSON.stringify(row)}\n`;
    // By hand rather than map/join: this runs for every row of a 10,000-user export.
    let line = "";
    for (let i = 0; i < this.columns.length; i++) {
      const { name, path } = this.columns[i]!;
      const cell = csvCell(path.length === 1 ? row[name] : valueAt(row, path));
      line = i === 0 ? cell : `${line},${cell}`;
    }
    return `${line}\r\n`;
  }

  /**
   * A row the rollup stored as JSON text (a /tokens day, a /users row): as it is for NDJSON
   * (the JSON answer prints the same text), parsed into cells for CSV.
   */
  storedRow(json: string): string {
    return this.format === "ndjson" ? `${json}\n` : this.row(JSON.parse(json) as JsonObject);
  }
}

type HttpBodyInit = MessageInitShape<typeof HttpBodySchema>;

/**
 * The export's HttpBody messages from its text as it is produced. The first HTTP_BODY_CHUNK_BYTES are
 * gathered before anything is sent; by then it is known whether the body reaches
 * COMPRESSOR_MIN_CONTENT_LENGTH, the size from which the JSON answers go compressed, so Content-Encoding
 * can still be set (ctx.responseHeader goes out with the first message). After that each chunk is
 * sent as soon as it is full. `coding`: the client's (http-body.ts requestedCoding), or null.
 */
export async function* exportChunks(
  ctx: HandlerContext,
  pieces: AsyncIterable<string> | Iterable<string>,
  format: ExportFormat,
  coding: ContentCoding | null,
): AsyncGenerator<HttpBodyInit> {
  let pending: string[] = [];
  let pendingBytes = 0;
  let encoder: StreamingEncoder | null | undefined; // undefined: not decided yet
  let first = true;
  const message = (data: Buffer): HttpBodyInit => {
    // Only the first message's content_type counts (google.api.HttpBody on a stream).
    const m = { contentType: first ? CONTENT_TYPES[format] : "", data };
    first = false;
    return m;
  };
  /** The pending text as messages of at most HTTP_BODY_CHUNK_BYTES (a stored row can be megabytes). */
  const flush = function* (last: boolean): Generator<HttpBodyInit> {
    if (encoder === undefined) {
      encoder = coding !== null && pendingBytes >= COMPRESSOR_MIN_CONTENT_LENGTH ? new StreamingEncoder(coding) : null;
      if (encoder !== null) ctx.responseHeader.set("content-encoding", encoder.coding);
    }
    const text = Buffer.from(pending.join(""), "utf8");
    pending = [];
    pendingBytes = 0;
    const data = encoder === null ? text : Buffer.concat([...encoder.push(text), ...(last ? encoder.end() : [])]);
    for (let at = 0; at < data.length; at += HTTP_BODY_CHUNK_BYTES) {
      stopIfAbandoned(ctx.signal);
      yield message(data.subarray(at, at + HTTP_BODY_CHUNK_BYTES));
    }
    if (first) yield message(data); // an empty body is still one message: it carries the content type
  };
  for await (const piece of pieces) {
    pending.push(piece);
    pendingBytes += Buffer.byteLength(piece, "utf8");
    if (pendingBytes >= HTTP_BODY_CHUNK_BYTES) yield* flush(false);
  }
  yield* flush(true);
}
