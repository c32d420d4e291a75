import { create, type DescField, type DescMessage, fromBinary, ScalarType, toBinary } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { IngestRequestSchema } from "../../gen/agentplane/analytics/v1/analytics_pb.js";
import { SetUserCreditLimitsRequestSchema } from "../../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { ReadinessReportSchema } from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import { PostMessageRequestSchema } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { ExportLogsServiceRequestSchema } from "../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import { ExportMetricsServiceRequestSchema } from "../../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import { ExponentialHistogramDataPoint_BucketsSchema } from "../../gen/opentelemetry/proto/metrics/v1/metrics_pb.js";
import { decodedSize, decodedSizeLimit } from "./decoded-size.js";

/** `count` empty elements of the repeated message field numbered `fieldNo`: two bytes each. */
function emptyElements(fieldNo: number, count: number): Uint8Array {
  const out = new Uint8Array(2 * count);
  for (let i = 0; i < count; i++) out[2 * i] = (fieldNo << 3) | 2;
  return out;
}

const concat = (...parts: Uint8Array[]) => Buffer.concat(parts);

describe("decodedSize", () => {
  it("admits a message as clients write it, and estimates its heap of the right order", () => {
    const request = create(IngestRequestSchema, {
      events: Array.from({ length: 1000 }, (_, i) => ({
        type: "tool_use",
        time: "2026-11-28T05:00:00.000Z",
        orgId: "0b5f3c1e-8f0a-4c43-9d8e-3f6a1e2b7c90",
        userId: `user-${i}`,
        client: "claude-code",
        tool: "Edit",
      })),
    });
    const bytes = toBinary(IngestRequestSchema, request);
    const size = decodedSize(IngestRequestSchema, bytes, decodedSizeLimit(bytes.length));
    expect(size).toMatchObject({ within: true, readable: true });
    // 1,000 events of a few short strings: about 300 bytes each once decoded.
    if (!size.within) throw new Error("refused");
    expect(size.bytes).toBeGreaterThan(1000 * 200);
    expect(size.bytes).toBeLessThan(1000 * 600);
    expect(size.bytes / bytes.length).toBeLessThan(8);
  });

  it("refuses empty elements of a repeated message field, naming it", () => {
    const bytes = emptyElements(4, 1 << 20); // PostMessageRequest.files: 2 MiB
    expect(decodedSize(PostMessageRequestSchema, bytes, decodedSizeLimit(bytes.length))).toEqual({
      within: false,
      field: "files[]",
    });
    // A few of them are nothing to refuse.
    const few = emptyElements(4, 100);
    expect(decodedSize(PostMessageRequestSchema, few, decodedSizeLimit(few.length))).toMatchObject({ within: true });
  });

  it("names the field where the scan passed the limit, through nested messages", () => {
    // ExportLogsServiceRequest.resource_logs[0].scope_logs[0].log_records[]: empty log records.
    const scopeLogs = emptyElements(2, 200_000); // ScopeLogs' fields: log_records
    const resourceLogs = concat(Uint8Array.of((2 << 3) | 2), varint(scopeLogs.length), scopeLogs);
    const bytes = concat(Uint8Array.of((1 << 3) | 2), varint(resourceLogs.length), resourceLogs);
    expect(() => fromBinary(ExportLogsServiceRequestSchema, bytes)).not.toThrow();
    expect(decodedSize(ExportLogsServiceRequestSchema, bytes, decodedSizeLimit(bytes.length))).toEqual({
      within: false,
      field: "resource_logs[].scope_logs[].log_records[]",
    });
  });

  it("counts unknown fields, unless the decoder is told to drop them", () => {
    // Field 15 is no field of SetUserCreditLimitsRequest: 1 MiB of empty unknown fields.
    const bytes = emptyElements(15, 1 << 19);
    expect(fromBinary(SetUserCreditLimitsRequestSchema, bytes).$unknown).toHaveLength(1 << 19);
    expect(decodedSize(SetUserCreditLimitsRequestSchema, bytes, decodedSizeLimit(bytes.length))).toEqual({
      within: false,
      field: "(the message)",
    });
    expect(
      decodedSize(SetUserCreditLimitsRequestSchema, bytes, decodedSizeLimit(bytes.length), {
        readUnknownFields: false,
      }),
    ).toMatchObject({ within: true, readable: true });
  });

  it("counts packed scalars one by one, and map entries with their message values", () => {
    // An exponential histogram's bucket counts (packed uint64 varints): a BigInt from each byte.
    const counts = new Uint8Array(1 << 20);
    const buckets = concat(Uint8Array.of((2 << 3) | 2), varint(counts.length), counts);
    expect(fromBinary(ExponentialHistogramDataPoint_BucketsSchema, buckets).bucketCounts).toHaveLength(1 << 20);
    expect(decodedSize(ExponentialHistogramDataPoint_BucketsSchema, buckets, decodedSizeLimit(buckets.length))).toEqual(
      {
        within: false,
        field: "bucket_counts[]",
      },
    );
    // A BigInt and an array slot each, and the message around them.
    const size = decodedSize(ExponentialHistogramDataPoint_BucketsSchema, buckets, Number.POSITIVE_INFINITY);
    if (!size.within) throw new Error("no limit, yet over it");
    expect(size.bytes - (24 + 8) * (1 << 20)).toBeGreaterThan(0);
    expect(size.bytes - (24 + 8) * (1 << 20)).toBeLessThan(200);
    // A Struct of 1 MiB of entries with an empty key and an empty Value: each makes a Value.
    const entry = Uint8Array.of((1 << 3) | 2, 2, (2 << 3) | 2, 0);
    const struct = Buffer.concat(Array.from({ length: 1 << 18 }, () => entry));
    expect(decodedSize(StructSchema, struct, decodedSizeLimit(struct.length))).toEqual({
      within: false,
      field: "fields",
    });
  });

  it("skips an unknown varint of any length as the decoder does, and counts what follows", () => {
    // Field 15 (unknown), a varint of 12 bytes, then 1 MiB of empty files[].
    const bytes = concat(
      Uint8Array.of(0x78, ...Array.from({ length: 11 }, () => 0x80), 0x00),
      emptyElements(4, 1 << 19),
    );
    expect(fromBinary(PostMessageRequestSchema, bytes).files).toHaveLength(1 << 19);
    expect(decodedSize(PostMessageRequestSchema, bytes, decodedSizeLimit(bytes.length))).toEqual({
      within: false,
      field: "files[]",
    });
  });

  it("goes on past a length that runs beyond the message, as the decoder does before it fails", () => {
    // files[0] claims more bytes than there are; inside it, empty unknown fields to the end.
    const inner = emptyElements(9, 1 << 20);
    const bytes = concat(Uint8Array.of((4 << 3) | 2), varint(inner.length + 100), inner);
    expect(() => fromBinary(PostMessageRequestSchema, bytes)).toThrow();
    expect(decodedSize(PostMessageRequestSchema, bytes, decodedSizeLimit(bytes.length))).toEqual({
      within: false,
      field: "files[]",
    });
  });

  it("stops, readable false, where nesting passes the decoder's recursion limit", () => {
    // Struct → Value → Struct ...: 60 levels of fields { "": { struct_value: ... } }.
    let bytes = new Uint8Array();
    for (let i = 0; i < 60; i++) {
      const value = concat(Uint8Array.of((5 << 3) | 2), varint(bytes.length), bytes); // Value.struct_value
      const entry = concat(Uint8Array.of((2 << 3) | 2), varint(value.length), value);
      bytes = concat(Uint8Array.of((1 << 3) | 2), varint(entry.length), entry); // Struct.fields
    }
    expect(() => fromBinary(StructSchema, bytes, { recursionLimit: 100 })).toThrow(/recursion/);
    expect(decodedSize(StructSchema, bytes, 1 << 30, { recursionLimit: 100 })).toMatchObject({
      within: true,
      readable: false,
    });
    expect(decodedSize(StructSchema, bytes, 1 << 30, { recursionLimit: 200 })).toMatchObject({ readable: true });
  });

  // The scan reads what the decoder reads: on any bytes, a message the decoder takes is one the
  // scan read to its end, and bytes the scan could not read are bytes the decoder refuses.
  const schemas: DescMessage[] = [
    PostMessageRequestSchema,
    IngestRequestSchema,
    ExportLogsServiceRequestSchema,
    ExportMetricsServiceRequestSchema,
    StructSchema,
    ReadinessReportSchema,
  ];
  for (const schema of schemas)
    it(`reads ${schema.typeName} as the decoder does, on valid and damaged bytes`, () => {
      fc.assert(
        fc.property(
          arbitraryMessage(schema, 3).map((init) => toBinary(schema, create(schema, init))),
          fc.array(fc.tuple(fc.nat(), fc.nat(255)), { maxLength: 3 }),
          fc.option(fc.nat()),
          // An unknown varint field (number 1000) of 1–14 bytes put in front: the decoder skips
          // varints of any length there.
          fc.option(fc.integer({ min: 1, max: 14 })),
          (valid, changes, cut, longVarint) => {
            expect(decodedSize(schema, valid, Number.POSITIVE_INFINITY)).toMatchObject({ readable: true });
            const prefix =
              longVarint === null
                ? new Uint8Array()
                : Uint8Array.from([0xc0, 0x3e, ...Array.from({ length: longVarint - 1 }, () => 0x80), 0x00]);
            const whole = concat(prefix, valid);
            const bytes = whole.slice(0, cut === null ? whole.length : cut % (whole.length + 1));
            for (const [at, value] of changes) if (bytes.length > 0) bytes[at % bytes.length] = value;
            const size = decodedSize(schema, bytes, Number.POSITIVE_INFINITY, { recursionLimit: 100 });
            if (!size.within) throw new Error("no limit, yet over it");
            let decoded = true;
            try {
              fromBinary(schema, bytes, { recursionLimit: 100 });
            } catch {
              decoded = false;
            }
            // Bytes the decoder takes are bytes the scan read to the end (and so counted).
            if (decoded) expect(size.readable).toBe(true);
          },
        ),
        { numRuns: 300 },
      );
    });
});

function varint(n: number): Uint8Array {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Uint8Array.from(out);
}

/** A message's init object with random fields set, nested messages `depth` levels down. */
function arbitraryMessage(desc: DescMessage, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const parts: Record<string, fc.Arbitrary<unknown>> = {};
  for (const field of desc.fields) {
    if (field.oneof !== undefined) continue;
    const value = arbitraryValue(field, depth);
    if (value !== undefined) parts[field.localName] = value;
  }
  return fc.record(parts, { requiredKeys: [] });
}

function arbitraryValue(field: DescField, depth: number): fc.Arbitrary<unknown> | undefined {
  switch (field.fieldKind) {
    case "scalar":
      return scalarOf(field.scalar);
    case "enum":
      return fc.constantFrom(...field.enum.values.map((v) => v.number));
    case "message":
      return depth > 0 ? arbitraryMessage(field.message, depth - 1) : undefined;
    case "list":
      if (field.listKind === "message")
        return depth > 0 ? fc.array(arbitraryMessage(field.message, depth - 1), { maxLength: 3 }) : undefined;
      return fc.array(
        field.listKind === "enum" ? fc.constantFrom(...field.enum.values.map((v) => v.number)) : scalarOf(field.scalar),
        { maxLength: 4 },
      );
    case "map": {
      const value =
        field.mapKind === "message"
          ? depth > 0
            ? arbitraryMessage(field.message, depth - 1)
            : undefined
          : field.mapKind === "enum"
            ? fc.constant(0)
            : scalarOf(field.scalar);
      return value === undefined ? undefined : fc.dictionary(fc.string({ maxLength: 4 }), value, { maxKeys: 2 });
    }
  }
}

function scalarOf(scalar: ScalarType): fc.Arbitrary<unknown> {
  switch (scalar) {
    case ScalarType.STRING:
      return fc.string({ maxLength: 8 });
    case ScalarType.BYTES:
      return fc.uint8Array({ maxLength: 8 });
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return fc.double({ noNaN: true, min: -1e6, max: 1e6 });
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return fc.nat();
    default:
      return fc.integer();
  }
}
