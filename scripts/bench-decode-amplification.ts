// bench:decode-amplification: how much memory and main-thread time decoding one request takes,
// per byte, for the request messages that can hold many elements: every method of every service
// the modules serve, and every repeated message field of its request (top level), filled with
// `--mib` MiB of empty elements (two bytes each in binary protobuf, `{},` in JSON). What the
// message limits admit is this many times larger in memory: 32 MiB for most services, 4 MiB
// for the OTLP receiver's (which decodes within a budget of its own: docs/otlp.md).
//
// It measures the decoders the servers run (protobuf-es fromBinary; JSON.parse then fromJson, as
// the REST edge reads a body), in this process, heap before and after with a forced GC between
// cases. It does not start a server.
//
// Usage: npm run bench:decode-amplification -- [--mib 4]
import { fromBinary, fromJson, type DescField, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { parseArgs } from "node:util";
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
  json: { mib: number; ms: number };
}[] = [];
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
          json: measure(() => fromJson(input, JSON.parse(jsonOf(field)) as JsonValue, { ignoreUnknownFields: true })),
        });
      }
    }
rows.sort((a, b) => b.binary.mib - a.binary.mib);
console.log(`each request: ${args.mib} MiB of empty elements of one repeated message field`);
console.log("rpc | access | field | binary protobuf: heap, time | JSON: heap, time");
for (const r of rows)
  console.log(
    `${r.rpc} | ${r.access} | ${r.field} | ${r.binary.mib.toFixed(0)} MiB (${(r.binary.mib / Number(args.mib)).toFixed(0)}×), ${r.binary.ms.toFixed(0)} ms | ${r.json.mib.toFixed(0)} MiB (${(r.json.mib / Number(args.mib)).toFixed(0)}×), ${r.json.ms.toFixed(0)} ms`,
  );
