// Undecoded methods (services/platform/undecoded.ts): a method a module names undecoded gets its
// binary gRPC request as bytes in the call's context, decompressed, whether the fast path is on
// or off, and an empty request message; other protocols still deliver it decoded. A real gRPC
// listener (grpc-listener.ts) serving the edge test service, whose GetThing is named undecoded and
// answers what it received; real clients (@grpc/grpc-js, connect-node) and raw HTTP/2.
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, createClient } from "@connectrpc/connect";
import { compressionBrotli, createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EdgeTestService, GetThingRequestSchema } from "../gen/agentplane/edgetest/v1/edgetest_pb.js";
import type { GrpcListener } from "../services/platform/grpc-listener.js";
import { kUndecodedRequest } from "../services/platform/undecoded.js";
import { envelope, H2Client, type H2Response } from "./reliability/support/raw-h2.js";
import { startEdgeTestListener } from "./support/edge-test-listener.js";
import { grpcClient } from "./support/grpc.js";

const GET_THING = `/${EdgeTestService.typeName}/GetThing`;
/** The undecoded method's largest message here. */
const MAX_BYTES = 64 * 1024;

const request = (thingId: string) => toBinary(GetThingRequestSchema, create(GetThingRequestSchema, { thingId }));

/** What the implementation received: the bytes (hex) in the context, the decoded thing_id. */
interface Received {
  undecoded: string | null;
  thingId: string;
}

async function listen(fastUnary: boolean, undecoded = new Map([[GET_THING, MAX_BYTES]])): Promise<GrpcListener> {
  return startEdgeTestListener(
    (router) =>
      router.service(EdgeTestService, {
        getThing(req, ctx) {
          const bytes = ctx.values.get(kUndecodedRequest);
          const received: Received = {
            undecoded: bytes === undefined ? null : Buffer.from(bytes).toString("hex"),
            thingId: req.thingId,
          };
          return { thing: { id: JSON.stringify(received) } };
        },
        listThings: (req, ctx) => ({
          things: [
            { id: JSON.stringify({ undecoded: ctx.values.get(kUndecodedRequest) ?? null, shelf: req.shelfId }) },
          ],
        }),
      }),
    { fastUnary, undecoded },
  );
}

function grpcStatus(res: H2Response): [string, string] {
  const from = res.trailers["grpc-status"] === undefined ? res.headers : res.trailers;
  return [String(from["grpc-status"]), decodeURIComponent(String(from["grpc-message"] ?? ""))];
}

describe.each([
  ["on", true],
  ["off", false],
])("an undecoded method, with the unary fast path %s", (_name, fastUnary) => {
  let listener: GrpcListener;
  let url: string;
  let raw: H2Client;
  beforeAll(async () => {
    listener = await listen(fastUnary);
    url = `http://127.0.0.1:${listener.port}`;
    raw = new H2Client(url);
  });
  afterAll(async () => {
    raw.close();
    listener.destroy();
    await listener.close();
  });

  const receivedOf = (id: string | undefined) => JSON.parse(id ?? "null") as Received;

  it("gets a plain gRPC client's message as its bytes, and an empty request message", async () => {
    const client = grpcClient(EdgeTestService, url);
    try {
      const answer = await client.call(EdgeTestService.method.getThing, { thingId: "t-1" });
      expect(receivedOf(answer.thing?.id)).toEqual({
        undecoded: Buffer.from(request("t-1")).toString("hex"),
        thingId: "",
      });
    } finally {
      client.close();
    }
  });

  it("gets it so with a query string on the path too, which routes the call as ever", async () => {
    const res = await raw.request(
      {
        path: `${GET_THING}?via=query`,
        headers: { "content-type": "application/grpc", te: "trailers" },
        body: [envelope(0, request("t-query"))],
      },
      10_000,
    );
    expect(grpcStatus(res)).toEqual(["0", ""]);
    expect(res.body.toString("latin1")).toContain(Buffer.from(request("t-query")).toString("hex"));
  });

  it("gets a gzip or brotli compressed message decompressed", async () => {
    const gzip = await raw.request(
      {
        path: GET_THING,
        headers: { "content-type": "application/grpc", te: "trailers", "grpc-encoding": "gzip" },
        body: [envelope(1, gzipSync(request("t-gzip")))],
      },
      10_000,
    );
    expect(grpcStatus(gzip)).toEqual(["0", ""]);
    const brotli = createClient(
      EdgeTestService,
      createGrpcTransport({ baseUrl: url, sendCompression: compressionBrotli }),
    );
    const answer = await brotli.getThing({ thingId: "t-br".repeat(400) }); // past the 1 KiB below which nothing is compressed
    expect(receivedOf(answer.thing?.id)).toEqual({
      undecoded: Buffer.from(request("t-br".repeat(400))).toString("hex"),
      thingId: "",
    });
  });

  it("refuses an encoding the listener does not have, a broken compressed message, and one past its limit before or after decompression", async () => {
    const call = (headers: Record<string, string>, body: Buffer) =>
      raw.request(
        { path: GET_THING, headers: { "content-type": "application/grpc", te: "trailers", ...headers }, body: [body] },
        10_000,
      );
    const [zstd, zstdMessage] = grpcStatus(await call({ "grpc-encoding": "zstd" }, envelope(1, request("t"))));
    expect([zstd, zstdMessage]).toEqual([
      String(Code.Unimplemented),
      'unknown compression "zstd": supported encodings are gzip,br',
    ]);
    expect(grpcStatus(await call({ "grpc-encoding": "gzip" }, envelope(1, Buffer.from([0x1f, 0x8b, 8, 0]))))).toEqual([
      String(Code.InvalidArgument),
      "request: the message does not decode (decompression failed)", // decode-errors.ts
    ]);
    expect(grpcStatus(await call({}, envelope(1, gzipSync(request("t")))))[0]).toBe(String(Code.InvalidArgument));
    const large = Buffer.alloc(MAX_BYTES + 1);
    expect(grpcStatus(await call({}, envelope(0, large)))).toEqual([
      String(Code.ResourceExhausted),
      `message size ${MAX_BYTES + 1} is larger than configured readMaxBytes ${MAX_BYTES}`,
    ]);
    expect(grpcStatus(await call({ "grpc-encoding": "gzip" }, envelope(1, gzipSync(large))))).toEqual([
      String(Code.ResourceExhausted),
      `message is larger than configured readMaxBytes ${MAX_BYTES} after decompression`,
    ]);
  });

  it("gets the decoded message from Connect, and other methods get theirs decoded as ever", async () => {
    const connect = createClient(EdgeTestService, createConnectTransport({ baseUrl: url, httpVersion: "2" }));
    const answer = await connect.getThing({ thingId: "t-connect" });
    expect(receivedOf(answer.thing?.id)).toEqual({ undecoded: null, thingId: "t-connect" });
    const grpc = createClient(EdgeTestService, createGrpcTransport({ baseUrl: url }));
    const listed = await grpc.listThings({ shelfId: "s-1" });
    expect(JSON.parse(listed.things[0]!.id)).toEqual({ undecoded: null, shelf: "s-1" });
  });
});

describe("naming a method undecoded", () => {
  it("fails at start when the name is no unary method the listener serves", async () => {
    await expect(listen(true, new Map([[`/${EdgeTestService.typeName}/GetThingg`, MAX_BYTES]]))).rejects.toThrow(
      /GetThingg is named undecoded but is no unary method served here/,
    );
  });
});
