// The REST edge's answers to what the reliability work found (RELIABILITY.md): the request
// deadline holds even when a handler ignores it, calls refused by a draining upstream are
// retried (and never turn into 500s), and requests Node's HTTP parser rejects still get the
// JSON error body. Plain functions and a real edge on port 0, no database needed.
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EdgeTestService } from "../../gen/agentplane/edgetest/v1/edgetest_pb.js";
import { handleClientError } from "../../services/edge/client-error.js";
import { createRestEdge } from "../../services/edge/edge.js";
import { MAX_RETRIES, neverReachedUpstream, withUpstreamRetries } from "../../services/edge/retry.js";

const refused = () => {
  const cause = Object.assign(new Error("Stream closed with error code NGHTTP2_REFUSED_STREAM"), {
    code: "ERR_HTTP2_STREAM_ERROR",
  });
  return Object.assign(new ConnectError("Stream closed with error code NGHTTP2_REFUSED_STREAM", Code.Internal), {
    cause,
  });
};

describe("upstream retries", () => {
  it("tells a refused stream or connection from errors of a call that ran", () => {
    expect(neverReachedUpstream(refused())).toBe(true);
    expect(
      neverReachedUpstream(
        Object.assign(new ConnectError("connect failed", Code.Unavailable), {
          cause: Object.assign(new Error("x"), { code: "ECONNREFUSED" }),
        }),
      ),
    ).toBe(true);
    expect(neverReachedUpstream(new ConnectError("rate limiter unavailable", Code.Unavailable))).toBe(false);
    expect(neverReachedUpstream(new ConnectError("internal error", Code.Internal))).toBe(false);
    expect(neverReachedUpstream(Object.assign(new Error("reset"), { code: "ECONNRESET" }))).toBe(false);
  });

  it("retries a refused call until it goes through", async () => {
    let calls = 0;
    const result = await withUpstreamRetries(async () => {
      if (++calls < 3) throw refused();
      return "ok";
    }, new AbortController().signal);
    expect(result).toBe("ok");
    expect(calls).toBe(3);
  });

  it("never retries a call that may have run, and gives up with 503 (not 500) after its retries", async () => {
    let calls = 0;
    const ran = new ConnectError("a backing service is unavailable", Code.Unavailable);
    await expect(
      withUpstreamRetries(async () => {
        calls++;
        return Promise.reject(ran);
      }, new AbortController().signal),
    ).rejects.toBe(ran);
    expect(calls).toBe(1);
    calls = 0;
    const err = await withUpstreamRetries(async () => {
      calls++;
      return Promise.reject(refused());
    }, new AbortController().signal).catch((e: unknown) => e);
    expect(calls).toBe(MAX_RETRIES + 1);
    expect((err as ConnectError).code).toBe(Code.Unavailable);
  });
});

describe("the edge's own deadline and parser errors", () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    // A handler that ignores its signal: only the edge can hold the deadline.
    const transport = createRouterTransport(({ service }) => {
      service(EdgeTestService, {
        async fail(req) {
          await new Promise((r) => setTimeout(r, req.sleepMs));
          return {};
        },
      });
    });
    server = createServer(
      createRestEdge({ services: [EdgeTestService], transport, logger: pino({ level: "silent" }), timeoutMs: 300 }),
    );
    server.on("clientError", handleClientError);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it("answers 504 at the deadline even when the handler never looks at it", async () => {
    const started = performance.now();
    const res = await fetch(`${base}/v1/fail/0?sleepMs=3000`);
    const ms = performance.now() - started;
    expect(res.status).toBe(504);
    expect(await res.json()).toMatchObject({
      status: 504,
      title: "Gateway Timeout",
      detail: "the request did not complete within 300 ms",
    });
    expect(ms).toBeLessThan(1_500);
    // A call within the deadline is untouched.
    expect((await fetch(`${base}/v1/fail/0?sleepMs=10`)).status).toBe(200);
  });

  const raw = (text: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(base).port), "127.0.0.1");
      let out = "";
      socket.on("data", (d) => (out += d.toString("latin1")));
      socket.on("end", () => resolve(out));
      socket.on("error", reject);
      socket.write(text);
    });

  it("closes the connection when it answers before reading an announced body (no reading of bodies of any size to reuse it)", async () => {
    const answer = await raw(
      'PATCH /v1/no-such-route HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000000\r\n\r\n{"a":',
    );
    expect(answer).toMatch(/^HTTP\/1.1 404 /);
    expect(answer).toMatch(/connection: close/i);
  });

  it("answers a HEAD request the parser rejects without a body", async () => {
    const answer = await raw("HEAD /v1/fail/0?x=\u007f HTTP/1.1\r\nhost: x\r\n\r\n");
    const [head, body] = answer.split("\r\n\r\n", 2);
    expect(head).toMatch(/^HTTP\/1.1 400 /);
    expect(head).toMatch(/x-request-id: \S+/i);
    expect(body).toBe("");
  });

  it.each([
    ["an unknown method", "FOO /v1/fail/0 HTTP/1.1\r\nhost: x\r\n\r\n", 400],
    [
      "a request line over the header limit",
      `GET /v1/fail/0?pad=${"p".repeat(20_000)} HTTP/1.1\r\nhost: x\r\n\r\n`,
      431,
    ],
    ["malformed framing", "GET /v1/fail/0 HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n", 400],
    ["garbage", "\u0001\u0002\u0003 nonsense\r\n\r\n", 400],
  ])("answers %s with the JSON error body", async (_what, request, status) => {
    const answer = await raw(request);
    const [head, body] = answer.split("\r\n\r\n", 2);
    expect(head).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
    expect(head).toMatch(/content-type: application\/json/i);
    const requestId = /x-request-id: (\S+)/i.exec(head!)?.[1];
    expect(JSON.parse(body!)).toEqual({ title: expect.any(String), detail: expect.any(String), status, requestId });
  });
});

describe("database data exceptions", () => {
  it("are the client's bad input (400), never a 500", async () => {
    const { toConnectError } = await import("../../services/platform/errors.js");
    for (const code of ["22021", "22P05", "22001", "22003", "22P02", "54000"]) {
      const { error, internal } = toConnectError(Object.assign(new Error("invalid byte sequence"), { code }));
      expect(error.code, code).toBe(Code.InvalidArgument);
      expect(internal).toBe(false);
    }
  });
});

describe("REQUEST_TIMEOUT_MS", () => {
  it("defaults to Envoy's 30 s route timeout and must be a positive number of milliseconds", async () => {
    const { loadConfig } = await import("../../services/config.js");
    expect(loadConfig({}).requestTimeoutMs).toBe(30_000);
    expect(loadConfig({ REQUEST_TIMEOUT_MS: "2500" }).requestTimeoutMs).toBe(2_500);
    for (const bad of ["0", "-1", "1.5", "soon"])
      expect(() => loadConfig({ REQUEST_TIMEOUT_MS: bad }), bad).toThrow(/REQUEST_TIMEOUT_MS/);
  });
});
