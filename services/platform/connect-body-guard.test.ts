import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { compressionGzip } from "@connectrpc/connect-node";
import type { UniversalServerRequest } from "@connectrpc/connect/protocol";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PostMessageRequestSchema } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { guardRequestBody, type HoldMessage } from "./connect-body-guard.js";
import { decodedSize } from "./decoded-size.js";
import { possibleMessagesHeap } from "./json-objects.js";

const method = { input: PostMessageRequestSchema, binaryOptions: undefined, maxBytes: 32 << 20 };

const envelope = (flags: number, data: Uint8Array) => {
  const out = Buffer.alloc(5 + data.length);
  out[0] = flags;
  out.writeUInt32BE(data.length, 1);
  out.set(data, 5);
  return out;
};

/** 1 MiB of empty files[] elements: refused by the estimate. */
const amplified = (() => {
  const files = Buffer.alloc(1 << 20);
  for (let i = 0; i < files.length; i += 2) files[i] = (4 << 3) | 2;
  return files;
})();
const ordinary = toBinary(
  PostMessageRequestSchema,
  create(PostMessageRequestSchema, { sessionId: "s", text: "hello" }),
);

async function* chunked(bytes: Uint8Array, cuts: number[]): AsyncIterable<Uint8Array> {
  let at = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    if (cut <= at || cut >= bytes.length) continue;
    yield bytes.subarray(at, cut);
    at = cut;
  }
  yield bytes.subarray(at);
}

/** What the handler would read through the guard, joined; or the error it ends with. */
async function read(
  contentType: string,
  body: Uint8Array,
  cuts: number[] = [],
  headers: [string, string][] = [],
  hold: HoldMessage = () => {},
) {
  const req = {
    httpVersion: "2.0",
    url: "http://localhost/agentplane.sessions.v1alpha1.SessionService/PostMessage",
    method: "POST",
    header: new Headers([["content-type", contentType], ...headers]),
    body: chunked(body, cuts),
    signal: new AbortController().signal,
  } as UniversalServerRequest;
  const guarded = guardRequestBody(req, method, [compressionGzip], hold);
  const out: Uint8Array[] = [];
  try {
    for await (const chunk of guarded.body as AsyncIterable<Uint8Array>) out.push(chunk);
  } catch (e) {
    return e instanceof ConnectError ? e : Promise.reject(e);
  }
  return Buffer.concat(out);
}

describe("guardRequestBody", () => {
  it("passes every byte on, in order, however the body is cut into chunks", async () => {
    const body = Buffer.concat([
      envelope(0, ordinary),
      envelope(0, new Uint8Array()),
      envelope(0b10, Buffer.from("{}")), // a Connect end of stream
      envelope(0, ordinary).subarray(0, 9), // cut short: the handler's to refuse
    ]);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat(body.length), { maxLength: 12 }), async (cuts) => {
        expect(Buffer.compare((await read("application/connect+proto", body, cuts)) as Buffer, body)).toBe(0);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses an amplified message whatever its flags, but where the protocol says it holds none", async () => {
    const refused = (res: unknown) => res instanceof ConnectError && res.code === Code.InvalidArgument;
    for (const contentType of ["application/grpc", "application/grpc-web+proto", "application/connect+proto"]) {
      expect(refused(await read(contentType, envelope(0, amplified), [3, 70_000]))).toBe(true);
    }
    // Connect's handler decodes a gRPC or gRPC-Web envelope flagged 0x02 as any other.
    expect(refused(await read("application/grpc", envelope(0b10, amplified)))).toBe(true);
    expect(refused(await read("application/grpc-web+proto", envelope(0b10, amplified)))).toBe(true);
    // A Connect end of stream and a gRPC-Web trailer frame hold no message.
    expect(refused(await read("application/connect+proto", envelope(0b10, amplified)))).toBe(false);
    expect(refused(await read("application/grpc-web+proto", envelope(0x80, amplified)))).toBe(false);
    // Compressed (gzip) with its header; Connect unary whole, compressed or not.
    const gzipped = await compressionGzip.compress(amplified);
    expect(refused(await read("application/grpc", envelope(1, gzipped), [], [["grpc-encoding", "gzip"]]))).toBe(true);
    expect(refused(await read("application/proto", amplified, [10, 5000]))).toBe(true);
    expect(refused(await read("application/proto", gzipped, [], [["content-encoding", "gzip"]]))).toBe(true);
  });

  it("passes on unchecked what it cannot read: an unknown encoding, or a length past the limit", async () => {
    const gzipped = await compressionGzip.compress(amplified);
    const unknown = envelope(1, gzipped);
    const read1 = await read("application/grpc", unknown, [], [["grpc-encoding", "snappy"]]);
    expect(Buffer.compare(read1 as Buffer, unknown)).toBe(0);
    const huge = Buffer.from([0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3]);
    expect(Buffer.compare((await read("application/grpc", huge, [2, 6])) as Buffer, huge)).toBe(0);
  });

  it("holds each admitted message's estimate for the call, and ends the body when the hold refuses", async () => {
    const large = toBinary(
      PostMessageRequestSchema,
      create(PostMessageRequestSchema, { sessionId: "s", text: "x".repeat(2 << 20) }),
    );
    const estimate = decodedSize(PostMessageRequestSchema, large, Number.MAX_SAFE_INTEGER);
    expect(estimate.within && estimate.bytes).toBeGreaterThan(2 << 20);
    const held: number[] = [];
    const body = Buffer.concat([envelope(0, large), envelope(0, ordinary)]);
    const passed = await read("application/grpc", body, [1000], [], (bytes) => held.push(bytes));
    expect(Buffer.compare(passed as Buffer, body)).toBe(0);
    expect(held).toEqual([estimate.within && estimate.bytes, expect.any(Number)]);
    // A JSON message is held by its possible messages' heap and its characters, two bytes each.
    const json = Buffer.from(JSON.stringify({ sessionId: "s", text: "x".repeat(2 << 20) }));
    held.length = 0;
    await read("application/json", json, [], [], (bytes) => held.push(bytes));
    expect(held).toEqual([possibleMessagesHeap(json)!.heap + 2 * json.length]);

    const busy = new ConnectError("busy", Code.Unavailable);
    const refusedBody = await read("application/grpc", body, [], [], () => {
      throw busy;
    });
    expect(refusedBody).toBe(busy);
  });
});
