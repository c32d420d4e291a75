// OTLP exports as Claude Code sends them, for bench:analytics: protobuf bodies of log records
// (claude_code.api_request, tool_result, user_prompt in turn) and of delta token-usage data points,
// one user's (its `user.email` on the resource, as a collector forwarding many users' data sends
// it), every record and point distinct, so none is a retry of another. Token points come by
// collection, as an SDK's metric reader exports them: one point per token type and model, all of
// one collection at its time, a millisecond after the one before (or, for the worst case, every
// point a millisecond after the one before). Encoded before the clock starts: what is timed is
// the receiver.
import { create, toBinary } from "@bufbuild/protobuf";
import { ExportLogsServiceRequestSchema } from "../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import { ExportMetricsServiceRequestSchema } from "../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import type { KeyValue } from "../gen/opentelemetry/proto/common/v1/common_pb.js";
import { AggregationTemporality } from "../gen/opentelemetry/proto/metrics/v1/metrics_pb.js";

const attr = (key: string, value: string | number): KeyValue =>
  ({
    key,
    value: {
      value: typeof value === "string" ? { case: "stringValue", value } : { case: "intValue", value: BigInt(value) },
    },
  }) as KeyValue;

const MODELS = ["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"];
const TOOLS = ["Read", "Edit", "Bash", "Grep", "mcp__github__create_pull_request"];
const TOKEN_TYPES = ["input", "output", "cacheRead", "cacheCreation"];

export interface OtlpExportsSpec {
  /** The emails of the organization's users, one per export in turn. */
  emails: readonly string[];
  exports: number;
  itemsPerExport: number;
  /** Unix ms of the first item; each following log record is a microsecond later, each collection of points a millisecond. */
  startMs: number;
}

/**
 * Token points of one collection: every token type of every model, at one time. One gives every
 * point a time of its own, so that no two are of one model and time (the store's worst case:
 * ingest/usage-points.ts folds one collection's points of a model into one row).
 */
export const POINTS_PER_COLLECTION = TOKEN_TYPES.length * MODELS.length;

const resourceOf = (email: string, exportIndex: number): KeyValue[] => [
  attr("service.name", "claude-code"),
  attr("user.email", email),
  attr("session.id", `bench-session-${exportIndex}`),
  attr("terminal.type", "vscode"),
];

/** Log-record exports: api_request, tool_result and user_prompt in turn. */
export function logExports(spec: OtlpExportsSpec): Uint8Array[] {
  const bodies: Uint8Array[] = [];
  let n = 0;
  for (let e = 0; e < spec.exports; e++) {
    const logRecords = Array.from({ length: spec.itemsPerExport }, (_, i) => {
      const time = BigInt(spec.startMs) * 1_000_000n + BigInt(n++) * 1000n;
      const kind = i % 3;
      const attributes =
        kind === 0
          ? [
              attr("model", MODELS[n % MODELS.length]!),
              attr("input_tokens", 1200 + (n % 500)),
              attr("output_tokens", 300 + (n % 200)),
              attr("cache_read_tokens", 5000),
              attr("cache_creation_tokens", 100),
            ]
          : kind === 1
            ? [attr("tool_name", TOOLS[n % TOOLS.length]!), attr("decision_source", "config")]
            : [attr("prompt_length", 40 + (n % 100))];
      const eventName = ["claude_code.api_request", "claude_code.tool_result", "claude_code.user_prompt"][kind]!;
      return { timeUnixNano: time, observedTimeUnixNano: time, eventName, attributes };
    });
    bodies.push(
      toBinary(
        ExportLogsServiceRequestSchema,
        create(ExportLogsServiceRequestSchema, {
          resourceLogs: [
            {
              resource: { attributes: resourceOf(spec.emails[e % spec.emails.length]!, e) },
              scopeLogs: [{ scope: { name: "com.anthropic.claude_code.events" }, logRecords }],
            },
          ],
        }),
      ),
    );
  }
  return bodies;
}

/**
 * Metric exports: delta claude_code.token.usage points, by token type and model, `perCollection`
 * points at each time (consecutive points cycle through the types and the models together, so
 * the POINTS_PER_COLLECTION points of a collection are each pair once).
 */
export function metricExports(spec: OtlpExportsSpec, perCollection = POINTS_PER_COLLECTION): Uint8Array[] {
  const bodies: Uint8Array[] = [];
  let n = 0;
  for (let e = 0; e < spec.exports; e++) {
    const dataPoints = Array.from({ length: spec.itemsPerExport }, () => {
      // A millisecond between collections: the time stored is in milliseconds, and points of one
      // model, type aside, in one millisecond are one row (ingest/usage-points.ts). Claude Code's
      // reader collects every minute.
      const end = BigInt(spec.startMs) * 1_000_000n + BigInt(Math.floor(n / perCollection)) * 1_000_000n;
      const point = {
        attributes: [attr("type", TOKEN_TYPES[n % TOKEN_TYPES.length]!), attr("model", MODELS[n % MODELS.length]!)],
        startTimeUnixNano: end - 1000n,
        timeUnixNano: end,
        value: { case: "asInt" as const, value: BigInt(100 + (n % 900)) },
      };
      n++;
      return point;
    });
    bodies.push(
      toBinary(
        ExportMetricsServiceRequestSchema,
        create(ExportMetricsServiceRequestSchema, {
          resourceMetrics: [
            {
              resource: { attributes: resourceOf(spec.emails[e % spec.emails.length]!, e) },
              scopeMetrics: [
                {
                  scope: { name: "com.anthropic.claude_code" },
                  metrics: [
                    {
                      name: "claude_code.token.usage",
                      unit: "tokens",
                      data: {
                        case: "sum",
                        value: { aggregationTemporality: AggregationTemporality.DELTA, isMonotonic: true, dataPoints },
                      },
                    },
                  ],
                },
              ],
            },
          ],
        }),
      ),
    );
  }
  return bodies;
}

/**
 * The export of the most memory per byte: `bytes` (4 MiB, the largest body taken, by default) of
 * empty log records, one resource and one scope: two bytes on the wire each (field 2 of
 * ScopeLogs, length 0), a message of a dozen fields once decoded. Written byte by byte: building
 * 2 * 10^6 messages to encode them would hold half a gigabyte here.
 */
export function emptyLogRecordsBody(bytes = 4 * 1024 * 1024): Uint8Array {
  const varint = (value: number) => {
    const out: number[] = [];
    for (; value > 127; value >>>= 7) out.push((value & 127) | 128);
    out.push(value);
    return out;
  };
  // The two headers take 10 bytes: a field tag and a length of up to 2^28 (4 bytes) each.
  const records = Math.floor((bytes - 10) / 2);
  const scopeLogs = new Uint8Array(records * 2).fill(0);
  for (let i = 0; i < scopeLogs.length; i += 2) scopeLogs[i] = 0x12;
  const scopeHeader = [0x12, ...varint(scopeLogs.length)]; // ResourceLogs.scope_logs
  const resourceHeader = [0x0a, ...varint(scopeHeader.length + scopeLogs.length)]; // request.resource_logs
  const body = new Uint8Array(resourceHeader.length + scopeHeader.length + scopeLogs.length);
  body.set(resourceHeader, 0);
  body.set(scopeHeader, resourceHeader.length);
  body.set(scopeLogs, resourceHeader.length + scopeHeader.length);
  return body;
}
