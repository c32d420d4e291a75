// The decoded-size check in the protocols Connect's handler decodes (services/platform/
// connect-body-guard.ts): Connect unary (binary and JSON, compressed or not), Connect streaming
// framing, gRPC-Web, gRPC with the JSON codec, and binary gRPC with the fast path off. A
// message of empty elements is refused INVALID_ARGUMENT in each protocol's own form, before it
// is decoded; real Connect and gRPC-Web clients still get ordinary calls through.
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { connect, type ClientHttp2Session } from "node:http2";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PostMessageRequestSchema,
  SessionRunnerService,
  SessionService,
} from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { decodedSizeLimit } from "../services/platform/decoded-size.js";
import { bearer, createTestOrg, createTestServiceAccount, createTestUser, type TestUser } from "./support/fixtures.js";
import { grpcClient } from "./support/grpc.js";
import { startTestServer, type TestServer } from "./support/server.js";

const POST_MESSAGE = `/${SessionService.typeName}/PostMessage`;
const frame = (flags: number, data: Buffer) => {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(data.length, 1);
  return Buffer.concat([head, data]);
};

interface Raw {
  status: number;
  headers: Record<string, string>;
  trailers: Record<string, string>;
  body: Buffer;
}

function call(session: ClientHttp2Session, headers: Record<string, string>, body: Buffer): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "POST", ":path": POST_MESSAGE, ...headers });
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
    // In pieces, as a client's DATA frames come: envelopes cut anywhere.
    for (let i = 0; i < body.length; i += 100_000) req.write(body.subarray(i, i + 100_000));
    req.end();
  });
}

/** grpc-status and grpc-message, from the trailers, a trailers-only answer, or a gRPC-Web trailer frame. */
function grpcStatus(res: Raw): [string | undefined, string] {
  let fields: Record<string, string> = { ...res.headers, ...res.trailers };
  if (res.body.length > 5 && res.body[0] === 0x80) {
    fields = {};
    for (const line of res.body.subarray(5).toString().split("\r\n")) {
      const at = line.indexOf(":");
      if (at > 0) fields[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
    }
  }
  return [fields["grpc-status"], decodeURIComponent(fields["grpc-message"] ?? "")];
}

describe("the decoded-size check in Connect's protocols", () => {
  let fast: TestServer;
  let slow: TestServer;
  let member: TestUser;
  /** A member on the server with the fast path off (its own database). */
  let slowMember: TestUser;
  let sessionId: string;
  let message: Buffer;
  let expected: string;

  beforeAll(async () => {
    fast = await startTestServer();
    // The fast path off: binary gRPC goes through Connect's handler too.
    slow = await startTestServer({ GRPC_UNARY_FAST_PATH: "false" });
    const orgId = await createTestOrg(fast.platform.db, "Connect body guard");
    member = await createTestUser(fast.platform.db, orgId, "member");
    slowMember = await createTestUser(
      slow.platform.db,
      await createTestOrg(slow.platform.db, "Fast path off"),
      "member",
    );
    const runner = grpcClient(
      SessionRunnerService,
      fast.internalGrpcUrl,
      bearer(await createTestServiceAccount(fast.platform.db)),
    );
    try {
      sessionId = (await runner.call(SessionRunnerService.method.createSession, { orgId, userId: member.userId }))
        .sessionId;
    } finally {
      runner.close();
    }
    // PostMessage with 2 MiB of empty files[] elements.
    const files = Buffer.alloc(2 << 20);
    for (let i = 0; i < files.length; i += 2) files[i] = (4 << 3) | 2;
    const head = Buffer.from(
      toBinary(PostMessageRequestSchema, create(PostMessageRequestSchema, { sessionId, text: "hello" })),
    );
    message = Buffer.concat([head, files]);
    expected =
      `request: the message would take more than ${decodedSizeLimit(message.length)} bytes once decoded ` +
      `(8 times its ${message.length} bytes, and 1048576), passing it in files[]: send fewer elements, or elements that carry values`;
  });
  afterAll(async () => {
    await fast?.close();
    await slow?.close();
  });

  const withSession = async <T>(url: string, body: (session: ClientHttp2Session) => Promise<T>) => {
    const session = connect(url);
    try {
      return await body(session);
    } finally {
      session.close();
    }
  };

  it("Connect unary, binary and gzip-compressed: 400 with invalid_argument naming the field", async () => {
    await withSession(fast.grpcUrl, async (session) => {
      for (const [headers, body] of [
        [{}, message],
        [{ "content-encoding": "gzip" }, gzipSync(message)],
      ] as const) {
        const res = await call(
          session,
          { "content-type": "application/proto", "connect-protocol-version": "1", ...bearer(member.key), ...headers },
          body,
        );
        expect(res.status).toBe(400);
        expect(JSON.parse(res.body.toString())).toEqual({ code: "invalid_argument", message: expected });
      }
    });
  });

  it("Connect unary JSON: a body of empty objects refused by its count, before it is parsed", async () => {
    const body = Buffer.from(`{"sessionId":"${sessionId}","text":"hi","files":[${"{},".repeat(400_000)}{}]}`);
    await withSession(fast.grpcUrl, async (session) => {
      const res = await call(
        session,
        { "content-type": "application/json", "connect-protocol-version": "1", ...bearer(member.key) },
        body,
      );
      expect(res.status).toBe(400);
      const error = JSON.parse(res.body.toString()) as { code: string; message: string };
      expect(error.code).toBe("invalid_argument");
      expect(error.message).toMatch(
        /^request: 800004 JSON objects, arrays and array items and 3 object members in \d+ bytes could take/,
      );
    });
  });

  it("gRPC-Web, gRPC with the JSON codec, and binary gRPC with the fast path off: grpc-status 3", async () => {
    const json = Buffer.from(`{"sessionId":"${sessionId}","files":[${"{},".repeat(400_000)}{}]}`);
    const cases: [string, Record<string, string>, Buffer, RegExp | string][] = [
      [fast.grpcUrl, { "content-type": "application/grpc-web+proto" }, frame(0, message), expected],
      [
        fast.grpcUrl,
        { "content-type": "application/grpc-web+proto", "grpc-encoding": "gzip" },
        frame(1, gzipSync(message)),
        expected,
      ],
      [fast.grpcUrl, { "content-type": "application/grpc+json", te: "trailers" }, frame(0, json), /JSON objects/],
      [slow.grpcUrl, { "content-type": "application/grpc", te: "trailers" }, frame(0, message), expected],
      [
        slow.grpcUrl,
        { "content-type": "application/grpc", te: "trailers", "grpc-encoding": "gzip" },
        frame(1, gzipSync(message)),
        expected,
      ],
    ];
    for (const [url, headers, body, wanted] of cases)
      await withSession(url, async (session) => {
        const res = await call(
          session,
          { ...headers, ...bearer((url === slow.grpcUrl ? slowMember : member).key) },
          body,
        );
        const [status, text] = grpcStatus(res);
        expect({ protocol: headers["content-type"], status }).toEqual({
          protocol: headers["content-type"],
          status: String(Code.InvalidArgument),
        });
        if (typeof wanted === "string") expect(text).toBe(wanted);
        else expect(text).toMatch(wanted);
      });
  });

  it("ordinary calls from Connect, gRPC-Web and gRPC clients go through, compressed or not", async () => {
    const files = Array.from({ length: 20 }, (_, i) => ({ name: `f${i}.txt`, data: `content ${i} `.repeat(200) }));
    for (const [name, transport] of [
      ["connect", createConnectTransport({ baseUrl: fast.grpcUrl, httpVersion: "2" })],
      ["connect+json", createConnectTransport({ baseUrl: fast.grpcUrl, httpVersion: "2", useBinaryFormat: false })],
      ["grpc-web", createGrpcWebTransport({ baseUrl: fast.grpcUrl, httpVersion: "2" })],
      ["grpc, fast path off", createGrpcTransport({ baseUrl: slow.grpcUrl })],
    ] as const) {
      const client = createClient(SessionService, transport);
      const url = name.startsWith("grpc,") ? slow : fast;
      const orgId = await createTestOrg(url.platform.db, `Ordinary ${name}`);
      const user = url === fast ? member : await createTestUser(url.platform.db, orgId, "member");
      const target =
        url === fast
          ? sessionId
          : await (async () => {
              const runner = grpcClient(
                SessionRunnerService,
                url.internalGrpcUrl,
                bearer(await createTestServiceAccount(url.platform.db)),
              );
              try {
                return (await runner.call(SessionRunnerService.method.createSession, { orgId, userId: user.userId }))
                  .sessionId;
              } finally {
                runner.close();
              }
            })();
      const posted = await client
        .postMessage({ sessionId: target, text: `from ${name}`, files }, { headers: bearer(user.key) })
        .catch((e: unknown) => ConnectError.from(e));
      expect({ name, ok: !(posted instanceof ConnectError) }).toEqual({ name, ok: true });
    }
  });
});
