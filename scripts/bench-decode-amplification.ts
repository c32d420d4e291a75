// bench:decode-amplification: how much memory and main-thread time decoding one request takes,
// per byte, for the request messages that can hold many elements: every method of every service
// the modules serve, and every repeated message field of its request (top level), filled with
// `--mib` MiB of empty elements (two bytes each in binary protobuf, `{},` in JSON). What the
// message limits admit is this many times larger in memory: 32 MiB for most services, 4 MiB
// for the OTLP receiver's (which decodes within a budget of its own: docs/otlp.md).
//
// It measures the decoders the servers run (protobuf-es fromBinary; JSON.parse then fromJson, as
// the REST edge reads a body), in this process, heap before and after with a forced GC between
// cases, and beside them the estimate the servers make before decoding (decoded-size.ts): its
// figure, its time without a limit, and whether the limit (8 times the bytes and 1 MiB) admits
// the message. The JSON bodies are refused before parsing by their count (json-objects.ts), which
// the last column says too. It does not start a server.
//
// Usage: npm run bench:decode-amplification -- [--mib 4]
import {
  create,
  fromBinary,
  fromJson,
  toBinary,
  type DescField,
  type DescMessage,
  type JsonValue,
} from "@bufbuild/protobuf";
import { IngestRequestSchema } from "../gen/agentplane/analytics/v1/analytics_pb.js";
import { GetSessionRequestSchema, PostMessageRequestSchema } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { parseArgs } from "node:util";
import { decodedSize, decodedSizeLimit } from "../services/platform/decoded-size.js";
import { tooManyJsonValues } from "../services/platform/json-objects.js";
import { isPublic } from "../services/platform/module.js";
import { ALL_MODULES } from "../services/modules.js";

const { values: args } = parseArgs({ options: { mib: { type: "string", default: "4" } } });
const BYTES = Number(args.mib) * 1024 * 1024;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error("run with node --expose-gc (npm run bench:decode-amplification does)");
  process.exit(2);
}

/** `BYTES` of empty elements of field `field`, in binary protobuf. */
function binaryOf(field: DescField): Uint8Array {
  const n = Math.floor(BYTES / 2);
  const out = Buffer.alloc(2 * n);
  for (let i = 0; i < n; i++) out[2 * i] = (field.number << 3) | 2; // length 0 follows
  return out;
}

/** `BYTES` of empty elements of field `field`, in JSON. */
function jsonOf(field: DescField): string {
  return `{"${field.jsonName}":[${"{},".repeat(Math.floor(BYTES / 3) - 1)}{}]}`;
}

function measure(decode: () => unknown): { mib: number; ms: number } {
  gc!();
  const before = process.memoryUsage().heapUsed;
  const started = performance.now();
  const kept = decode();
  const ms = performance.now() - started;
  const mib = (process.memoryUsage().heapUsed - before) / 1024 / 1024;
  if (kept === undefined) throw new Error("nothing decoded");
  return { mib, ms };
}

const rows: {
  rpc: string;
  access: string;
  field: string;
  binary: { mib: number; ms: number };
  estimate: { mib: number; ms: number; admitted: boolean };
  json: { mib: number; ms: number; refused: boolean };
}[] = [];
/** The scan before decoding (decoded-size.ts): its estimate, its time, and whether the limit admits the message. */
function estimate(input: DescMessage, bytes: Uint8Array): { mib: number; ms: number; admitted: boolean } {
  const started = performance.now();
  const size = decodedSize(input, bytes, Number.POSITIVE_INFINITY);
  const ms = performance.now() - started;
  if (!size.within) throw new Error("no limit, yet over it");
  return { mib: size.bytes / 1024 / 1024, ms, admitted: size.bytes <= decodedSizeLimit(bytes.length) };
}
for (const module of ALL_MODULES)
  for (const served of module.services)
    for (const method of served.service.methods) {
      const input: DescMessage = method.input;
      for (const field of input.fields) {
        if (field.fieldKind !== "list" || field.listKind !== "message") continue;
        rows.push({
          rpc: `${served.service.typeName}/${method.name}`,
          // The OTLP Export methods' binary gRPC messages reach the receiver undecoded (undecoded.ts).
          access: `${isPublic(served) ? "public" : "internal"}${served.undecoded?.methods.includes(method.name) ? ", undecoded in binary gRPC" : ""}`,
          field: `${field.name}[]`,
          binary: measure(() => fromBinary(input, binaryOf(field))),
          estimate: estimate(input, binaryOf(field)),
          json: {
            ...measure(() => fromJson(input, JSON.parse(jsonOf(field)) as JsonValue, { ignoreUnknownFields: true })),
            refused: tooManyJsonValues(Buffer.from(jsonOf(field))) !== undefined,
          },
        });
      }
    }
rows.sort((a, b) => b.binary.mib - a.binary.mib);
console.log(`each request: ${args.mib} MiB of empty elements of one repeated message field`);
console.log(
  "rpc | access | field | binary protobuf: heap, time | estimate before decoding: heap, time, verdict | JSON: heap, time, verdict",
);
for (const r of rows)
  console.log(
    `${r.rpc} | ${r.access} | ${r.field} | ${r.binary.mib.toFixed(0)} MiB (${(r.binary.mib / Number(args.mib)).toFixed(0)}×), ${r.binary.ms.toFixed(0)} ms | ${r.estimate.mib.toFixed(0)} MiB, ${r.estimate.ms.toFixed(0)} ms, ${r.estimate.admitted ? "admitted" : "refused"} | ${r.json.mib.toFixed(0)} MiB (${(r.json.mib / Number(args.mib)).toFixed(0)}×), ${r.json.ms.toFixed(0)} ms, ${r.json.refused ? "refused" : "admitted"} by the count`,
  );

// What the estimate costs on messages as clients write them, beside decoding them: both timed
// over the same bytes, best of 5 rounds, and the estimate's figure beside the heap a decoded
// message keeps (after a collection, unlike the figures above, which count the decoder's garbage).
const ordinary: [string, DescMessage, Uint8Array][] = [
  [
    "TelemetryService/Ingest, 1,000 events",
    IngestRequestSchema,
    toBinary(
      IngestRequestSchema,
      create(IngestRequestSchema, {
        events: Array.from({ length: 1000 }, (_, i) => ({
          type: "tool_use",
          time: "2026-11-28T05:00:00.000Z",
          orgId: "0b5f3c1e-8f0a-4c43-9d8e-3f6a1e2b7c90",
          userId: `user-${i % 50}`,
          sessionId: `session-${i % 20}`,
          client: "claude-code",
          tool: "Edit",
          modelId: "claude-sonnet-4-5",
          inputTokens: 1200,
          outputTokens: 300,
        })),
      }),
    ),
  ],
  [
    "SessionService/PostMessage, 20 files of 2 KB",
    PostMessageRequestSchema,
    toBinary(
      PostMessageRequestSchema,
      create(PostMessageRequestSchema, {
        sessionId: "0b5f3c1e-8f0a-4c43-9d8e-3f6a1e2b7c90",
        text: "Read these and fix the failing test",
        files: Array.from({ length: 20 }, (_, i) => ({
          name: `f${i}.ts`,
          path: `src/f${i}.ts`,
          data: "x".repeat(2000),
        })),
      }),
    ),
  ],
  [
    "SessionService/GetSession",
    GetSessionRequestSchema,
    toBinary(
      GetSessionRequestSchema,
      create(GetSessionRequestSchema, { sessionId: "0b5f3c1e-8f0a-4c43-9d8e-3f6a1e2b7c90" }),
    ),
  ],
];
/** Heap a decoded message keeps, garbage collected: the mean over 20 kept copies. */
const retained = (decode: () => unknown) => {
  gc!();
  const before = process.memoryUsage().heapUsed;
  const kept = Array.from({ length: 20 }, decode);
  gc!();
  const bytes = (process.memoryUsage().heapUsed - before) / kept.length;
  return bytes;
};
const best = (rounds: number, times: number, run: () => unknown) => {
  let fastest = Number.POSITIVE_INFINITY;
  for (let r = 0; r < rounds; r++) {
    const started = performance.now();
    for (let i = 0; i < times; i++) run();
    fastest = Math.min(fastest, (performance.now() - started) / times);
  }
  return fastest;
};
console.log("");
console.log("ordinary message | bytes | decoded heap | estimate | decode µs | estimate µs | estimate / decode");
for (const [name, desc, bytes] of ordinary) {
  const times = Math.max(200, Math.floor(20_000_000 / bytes.length));
  const decodeUs = best(5, times, () => fromBinary(desc, bytes)) * 1000;
  const estimateUs = best(5, times, () => decodedSize(desc, bytes, decodedSizeLimit(bytes.length))) * 1000;
  const size = decodedSize(desc, bytes, Number.POSITIVE_INFINITY);
  const heap = retained(() => fromBinary(desc, bytes));
  console.log(
    `${name} | ${bytes.length} | ${heap > 0 ? Math.round(heap) : "(too small to see)"} | ${size.within ? size.bytes : "-"} | ${decodeUs.toFixed(1)} | ${estimateUs.toFixed(1)} | ${((100 * estimateUs) / decodeUs).toFixed(0)}%`,
  );
}
