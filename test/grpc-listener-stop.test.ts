// A gRPC listener's forced stop with a peer that stopped reading: a streamed answer fills the
// socket buffers, the server's write to that socket stays in progress, and Node's
// Http2Session.destroy() alone never finishes closing such a session, so the listener's close()
// never resolved and the process never stopped (seen after the 1,000-case RPC fuzz).
// grpc-listener.ts destroys the socket too.
import { create, toBinary } from "@bufbuild/protobuf";
import { connect } from "node:http2";
import { afterEach, describe, expect, it } from "vitest";
import { DownloadThingRequestSchema, EdgeTestService } from "../gen/agentplane/edgetest/v1/edgetest_pb.js";
import type { GrpcListener } from "../services/platform/grpc-listener.js";
import { startEdgeTestListener } from "./support/edge-test-listener.js";
import { envelope } from "./reliability/support/raw-h2.js";
import { startTcpProxy, type TcpProxy } from "./support/tcp-proxy.js";

const CHUNK_BYTES = 64 * 1024;

describe("a gRPC listener's destroy, with a peer that stopped reading", () => {
  let listener: GrpcListener | undefined;
  let proxy: TcpProxy | undefined;
  afterEach(async () => {
    listener?.destroy();
    await proxy?.close();
  });

  it("closes every connection, so that close() resolves", async () => {
    let chunksWritten = 0;
    listener = await startEdgeTestListener((router) =>
      router.service(EdgeTestService, {
        // An answer without end: it streams until the connection goes.
        async *downloadThing() {
          for (;;) {
            chunksWritten++;
            yield { contentType: "text/plain", data: Buffer.alloc(CHUNK_BYTES, 97) };
          }
        },
      }),
    );
    proxy = await startTcpProxy("127.0.0.1", listener.port);

    // A client with large windows, so that flow control does not stop the server before the
    // socket buffers are full.
    const client = connect(`http://127.0.0.1:${proxy.port}`, {
      settings: { initialWindowSize: 2 ** 31 - 1 },
    });
    client.on("error", () => {});
    client.on("connect", () => client.setLocalWindowSize(2 ** 31 - 1));
    const stream = client.request({
      ":method": "POST",
      ":path": `/${EdgeTestService.typeName}/DownloadThing`,
      "content-type": "application/grpc",
      te: "trailers",
    });
    stream.on("error", () => {});
    stream.end(envelope(0, toBinary(DownloadThingRequestSchema, create(DownloadThingRequestSchema, { thingId: "t" }))));
    await new Promise((resolve) => stream.once("data", resolve));

    // The client stops reading: the server writes until its writes no longer complete.
    proxy.stall();
    let before = -1;
    while (before !== chunksWritten) {
      before = chunksWritten;
      await new Promise((r) => setTimeout(r, 300));
    }

    const closed = listener.close().then(() => "closed" as const);
    // The graceful close cannot end the stream: it waits for the answer, which cannot go out.
    const graceful = await Promise.race([closed, new Promise((r) => setTimeout(() => r("waiting"), 500))]);
    expect(graceful).toBe("waiting");

    listener.destroy();
    const forced = await Promise.race([closed, new Promise((r) => setTimeout(() => r("hung"), 3_000))]);
    expect(forced).toBe("closed");
    client.destroy();
  }, 30_000);
});
