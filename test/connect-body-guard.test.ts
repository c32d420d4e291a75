// The decoded-size check in the protocols Connect's handler decodes (services/platform/
// connect-body-guard.ts): Connect unary (binary and JSON, compressed or not), Connect streaming
// framing, gRPC-Web, gRPC with the JSON codec, and binary gRPC with the fast path off. A
// message of empty elements is refused INVALID_ARGUMENT in each protocol's own form, before it
// is decoded; real Connect and gRPC-Web clients still get ordinary calls through.
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostMessageRequestSchema, SessionService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { decodedSizeLimit } from "../services/platform/decoded-size.js";
import { bearer, createTestOrg, createTestUser, type TestUser } from "./support/fixtures.js";
import { envelope as frame, H2Client, type H2Response } from "./reliability/support/raw-h2.js";
import { startTestServer, type TestServer } from "./support/server.js";
import { createTestSession } from "./support/sessions.js";

const POST_MESSAGE = `/${SessionService.typeName}/PostMessage`;
/** A raw POST to PostMessage, its body in pieces as a client's DATA frames come: envelopes cut anywhere. */
function post(client: H2Client, headers: Record<string, string>, body: Buffer): Promise<H2Response> {
  const pieces: Buffer[] = [];
  for (let i = 0; i < body.length; i += 100_000) pieces.push(body.subarray(i, i + 100_000));
  return client.request({ path: POST_MESSAGE, headers, body: pieces }, 30_000);
}

/** grpc-status and grpc-message, from the trailers, a trailers-only answer, or a gRPC-Web trailer frame. */
function grpcStatus(res: H2Response): [string | undefined, string] {
  let fields: Record<string, unknown> = { ...res.headers, ...res.trailers };
  if (res.body.length > 5 && res.body[0] === 0x80) {
    fields = {};
    for (const line of res.body.subarray(5).toString().split("\r\n")) {
      const at = line.indexOf(":");
      if (at > 0) fields[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
    }
  }
  const text = (name: string) => (fields[name] === undefined ? undefined : String(fields[name]));
  return [text("grpc-status"), decodeURIComponent(text("grpc-message") ?? "")];
}

describe("the decoded-size check in Connect's protocols", () => {
  let fast: TestServer;
  let slow: TestServer;
  let fastClient: H2Client;
  let slowClient: H2Client;
  let member: TestUser;
  /** A member on the server with the fast path off (its own database). */
  let slowMember: TestUser;
  let sessionId: string;
  let slowSessionId: string;
  let message: Buffer;
  let expected: string;

  beforeAll(async () => {
    fast = await startTestServer();
    // The fast path off: binary gRPC goes through Connect's handler too.
    slow = await startTestServer({ GRPC_UNARY_FAST_PATH: "false" });
    fastClient = new H2Client(fast.grpcUrl);
    slowClient = new H2Client(slow.grpcUrl);
    const orgId = await createTestOrg(fast.platform.db, "Connect body guard");
    member = await createTestUser(fast.platform.db, orgId, "member");
    slowMember = await createTestUser(
      slow.platform.db,
      await createTestOrg(slow.platform.db, "Fast path off"),
      "member",
    );
    sessionId = await createTestSession(fast, member);
    slowSessionId = await createTestSession(slow, slowMember);
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
    fastClient?.close();
    slowClient?.close();
    await fast?.close();
    await slow?.close();
  });

  it("Connect unary, binary and gzip-compressed: 400 with invalid_argument naming the field", async () => {
    for (const [headers, body] of [
      [{}, message],
      [{ "content-encoding": "gzip" }, gzipSync(message)],
    ] as const) {
      const res = await post(
        fastClient,
        { "content-type": "application/proto", "connect-protocol-version": "1", ...bearer(member.key), ...headers },
        body,
      );
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body.toString())).toEqual({ code: "invalid_argument", message: expected });
    }
  });

  it("Connect unary JSON: a body of empty objects refused by its count, before it is parsed", async () => {
    const body = Buffer.from(`{"sessionId":"${sessionId}","text":"hi","files":[${"{},".repeat(400_000)}{}]}`);
    const res = await post(
      fastClient,
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
    for (const [url, headers, body, wanted] of cases) {
      const slowPath = url === slow.grpcUrl;
      const res = await post(
        slowPath ? slowClient : fastClient,
        { ...headers, ...bearer((slowPath ? slowMember : member).key) },
        body,
      );
      const [status, text] = grpcStatus(res);
      expect({ protocol: headers["content-type"], status }).toEqual({
        protocol: headers["content-type"],
        status: String(Code.InvalidArgument),
      });
      if (typeof wanted === "string") expect(text).toBe(wanted);
      else expect(text).toMatch(wanted);
    }
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
      const [user, target] = name.startsWith("grpc,") ? [slowMember, slowSessionId] : [member, sessionId];
      const posted = await client
        .postMessage({ sessionId: target, text: `from ${name}`, files }, { headers: bearer(user.key) })
        .catch((e: unknown) => ConnectError.from(e));
      expect({ name, ok: !(posted instanceof ConnectError) }).toEqual({ name, ok: true });
    }
  });
});
