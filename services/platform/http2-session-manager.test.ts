// The upstream session manager against a real HTTP/2 server: a connection destroyed with an error
// (what connect-node does on a GOAWAY without open streams) and left by the manager for a new one
// must not raise that error later as an uncaught exception (connectrpc/connect-es#1768).
import { once } from "node:events";
import { constants, createServer, type ClientHttp2Session, type ClientHttp2Stream, type Http2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { createHttp2SessionManager } from "./http2-session-manager.js";

describe("createHttp2SessionManager", () => {
  let server: Http2Server;
  let url: string;

  beforeAll(async () => {
    server = createServer();
    server.on("stream", (stream) => {
      stream.respond({ ":status": 200 });
      stream.end("ok");
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** The stream's body, once the stream has closed (it holds no error to raise later). */
  const body = async (stream: ClientHttp2Stream) => {
    let text = "";
    stream.setEncoding("utf8");
    stream.on("data", (c: string) => (text += c));
    await once(stream, "close");
    return text;
  };

  it("swallows the error Node.js raises late on a connection the manager has left", async () => {
    const manager = createHttp2SessionManager(url);
    onTestFinished(() => manager.abort());
    expect(await body(await manager.request("GET", "/", {}, {}))).toBe("ok");
    const conn = (manager as unknown as { s: { conn: ClientHttp2Session } }).s.conn;
    const late: Error[] = [];
    const onUncaught = (err: Error) => late.push(err);
    process.on("uncaughtException", onUncaught);
    try {
      // A GOAWAY without open streams: Node.js closes the session, and the manager destroys it
      // with an error, which Node.js emits once the socket has closed.
      conn.close();
      conn.destroy(new Error("received GOAWAY without any open streams"), constants.NGHTTP2_NO_ERROR);
      // The next request finds the connection destroyed and moves to a new one at once.
      expect(await body(await manager.request("GET", "/", {}, {}))).toBe("ok");
      await new Promise((r) => setTimeout(r, 100));
      expect(conn.destroyed).toBe(true);
    } finally {
      process.off("uncaughtException", onUncaught);
    }
    expect(late.map((e) => e.message)).toEqual([]);
  });
});
