// The request deadline's sweep against a real HTTP/2 server (Node's compatibility API, as the gRPC
// listeners use it): a stream closed on the wire but kept by Node for request data nobody reads
// is destroyed once it has been open longer than the timeout. test/grpc-request-deadline.test.ts
// covers the rest through the real server.
import { once } from "node:events";
import { connect, createServer, type Http2Server, type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "./logger.js";
import { createRequestDeadline, type RequestDeadline } from "./request-deadline.js";

const TIMEOUT_MS = 200;

/** Whether `res` closes (its stream destroyed) within `ms`. */
const closesWithin = (res: Http2ServerResponse, ms: number) =>
  new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    res.once("close", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });

describe("createRequestDeadline", () => {
  let server: Http2Server | undefined;
  let deadline: RequestDeadline | undefined;
  afterEach(async () => {
    deadline?.stop();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });

  /**
   * A server that reads a request's first chunk, stops reading (as Connect does when a message
   * does not decode) and answers; the client then sends two chunks more and ends. Resolves with
   * the server's response once the client's stream has closed.
   */
  async function leaveUnreadData(track: boolean): Promise<Http2ServerResponse> {
    deadline = createRequestDeadline({ timeoutMs: TIMEOUT_MS, logger: createLogger("silent") });
    let answered: Http2ServerResponse | undefined;
    server = createServer((req: Http2ServerRequest, res: Http2ServerResponse) => {
      if (track) deadline!.track(res.stream, req.url, () => {});
      req.once("data", () => {
        req.destroy();
        answered = res;
        res.end("refused");
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const session = connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      const stream = session.request({ ":method": "POST", ":path": "/" });
      stream.resume();
      stream.write(Buffer.alloc(10, 1));
      await once(stream, "end");
      for (let i = 0; i < 2; i++) {
        stream.write(Buffer.alloc(100, 1));
        await new Promise((r) => setTimeout(r, 30));
      }
      stream.end();
      await once(stream, "close");
      // The server has seen the end too.
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      session.close();
    }
    return answered!;
  }

  it("without it, Node keeps such a stream (its 'close' never comes)", async () => {
    const res = await leaveUnreadData(false);
    expect(res.stream.closed).toBe(true);
    expect(await closesWithin(res, 5 * TIMEOUT_MS)).toBe(false);
    res.stream.destroy();
  });

  it("its sweep destroys it once it has been open longer than the timeout", async () => {
    const res = await leaveUnreadData(true);
    expect(await closesWithin(res, 5 * TIMEOUT_MS)).toBe(true);
  });
});
