// A request message that does not decode is INVALID_ARGUMENT, in every protocol the gRPC
// listeners speak (connect-es itself answers INTERNAL for these: services/platform/decode-errors.ts).
// Raw HTTP/2 requests to grpc.health.v1.Health (open to any caller) with a truncated message.
import { connect, type ClientHttp2Session } from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./support/server.js";

/** A varint that never ends: field 1 (string) announcing a length, then nothing. */
const TRUNCATED = Buffer.from([0x0a, 0xff]);
const frame = (flags: number, data: Buffer) => Buffer.concat([Buffer.from([flags, 0, 0, 0, data.length]), data]);

interface Raw {
  status: number;
  headers: Record<string, string>;
  trailers: Record<string, string>;
  body: Buffer;
}

function call(session: ClientHttp2Session, path: string, headers: Record<string, string>, body: Buffer): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "POST", ":path": path, ...headers });
    const out: Raw = { status: 0, headers: {}, trailers: {}, body: Buffer.alloc(0) };
    const chunks: Buffer[] = [];
    req.on("response", (h) => {
      out.status = Number(h[":status"]);
      for (const [k, v] of Object.entries(h)) if (typeof v === "string") out.headers[k] = v;
    });
    req.on("trailers", (t) => {
      for (const [k, v] of Object.entries(t)) if (typeof v === "string") out.trailers[k] = v;
    });
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve({ ...out, body: Buffer.concat(chunks) }));
    req.on("error", reject);
    req.end(body);
  });
}

describe("request messages that do not decode", () => {
  let server: TestServer;
  let session: ClientHttp2Session;
  beforeAll(async () => {
    server = await startTestServer();
    session = connect(server.grpcUrl);
  });
  afterAll(async () => {
    session?.close();
    await server?.close();
  });

  it("gRPC: grpc-status 3 naming the request", async () => {
    const res = await call(
      session,
      "/grpc.health.v1.Health/Check",
      { "content-type": "application/grpc" },
      frame(0, TRUNCATED),
    );
    const status = res.trailers["grpc-status"] ?? res.headers["grpc-status"];
    const message = decodeURIComponent(res.trailers["grpc-message"] ?? res.headers["grpc-message"] ?? "");
    expect([status, message]).toEqual([
      "3",
      expect.stringMatching(/^request: the message does not decode \(parse binary: /),
    ]);
  });

  it("gRPC: a compressed flag without a grpc-encoding is status 3 too", async () => {
    const res = await call(
      session,
      "/grpc.health.v1.Health/Check",
      { "content-type": "application/grpc" },
      frame(1, Buffer.from([0x0a, 0x00])),
    );
    expect(res.trailers["grpc-status"] ?? res.headers["grpc-status"]).toBe("3");
  });

  it("gRPC-Web: the trailer frame says 3", async () => {
    const res = await call(
      session,
      "/grpc.health.v1.Health/Check",
      { "content-type": "application/grpc-web+proto" },
      frame(0, TRUNCATED),
    );
    expect(res.body[0]).toBe(0x80);
    const trailer = res.body.subarray(5).toString("utf8");
    expect(trailer).toMatch(/grpc-status: 3\r\n/);
  });

  it("Connect unary: 400 with code invalid_argument", async () => {
    const res = await call(
      session,
      "/grpc.health.v1.Health/Check",
      { "content-type": "application/proto", "connect-protocol-version": "1" },
      TRUNCATED,
    );
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body.toString("utf8"))).toEqual({
      code: "invalid_argument",
      message: expect.stringMatching(/^request: the message does not decode/),
    });
  });

  it("Connect streaming: the end-of-stream frame carries invalid_argument", async () => {
    const res = await call(
      session,
      "/grpc.health.v1.Health/Watch",
      { "content-type": "application/connect+proto", "connect-protocol-version": "1" },
      frame(0, TRUNCATED),
    );
    expect(res.body[0]).toBe(0x02);
    expect(JSON.parse(res.body.subarray(5).toString("utf8")).error).toMatchObject({ code: "invalid_argument" });
  });

  it("leaves a message that decodes alone", async () => {
    const res = await call(
      session,
      "/grpc.health.v1.Health/Check",
      { "content-type": "application/grpc" },
      frame(0, Buffer.alloc(0)),
    );
    expect(res.trailers["grpc-status"]).toBe("0");
  });

  it("refuses a deadline past Node's longest timer as the client's error, not a call ended at once", async () => {
    const res = await call(
      session,
      "/grpc.health.v1.Health/Check",
      { "content-type": "application/grpc", "grpc-timeout": "99999999H" },
      frame(0, Buffer.alloc(0)),
    );
    expect(res.trailers["grpc-status"] ?? res.headers["grpc-status"]).toBe("3");
  });
});
