// Request messages whose decoded form would be far larger than their bytes (empty or nearly
// empty elements of a repeated message field: BENCHMARKS.md, "Decode amplification") are refused
// before they are built, with a 400 / INVALID_ARGUMENT naming the field: over gRPC (plain and
// gzip), and through the REST edge both before JSON.parse (objects too many for their bytes) and
// after (the message Envoy would send, refused as the gRPC listener refuses it, in its words).
// Ordinary messages of the same methods are taken.
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostMessageRequestSchema, SessionService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { decodedSizeLimit } from "../services/platform/decoded-size.js";
import { tooManyJsonValuesMessage } from "../services/platform/json-objects.js";
import { api, bearer, createTestOrg, createTestUser, type TestUser } from "./support/fixtures.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { startTestServer, type TestServer } from "./support/server.js";
import { createTestSession } from "./support/sessions.js";

describe("decode amplification", () => {
  let server: TestServer;
  let member: TestUser;
  let sessionId: string;
  let sessions: GrpcCaller;

  beforeAll(async () => {
    server = await startTestServer();
    const orgId = await createTestOrg(server.platform.db, "Decode amplification");
    member = await createTestUser(server.platform.db, orgId, "member");
    sessionId = await createTestSession(server, member);
    sessions = grpcClient(SessionService, server.grpcUrl, bearer(member.key));
  });
  afterAll(async () => {
    sessions?.close();
    await server?.close();
  });

  const post = (body: unknown) =>
    api(server.restUrl, member.key, `/api/v0/sessions/${sessionId}/messages`, { method: "POST", body });

  it("REST: a body of many empty objects is refused before it is parsed", async () => {
    const body = `{"text":"hi","files":[${"{},".repeat(400_000)}{}]}`;
    const res = await post(body);
    expect(res.status).toBe(400);
    // The body, the array, and 400,001 items, each an object.
    expect(res.json.detail).toBe(tooManyJsonValuesMessage({ messages: 2 + 2 * 400_001, members: 2 }, body.length));
    expect(res.json.detail).toBe(
      `request: 800004 JSON objects, arrays and array items and 2 object members in ${body.length} bytes could take more than ` +
        `${decodedSizeLimit(body.length)} bytes once decoded (8 times the bytes, and 1048576): ` +
        "send fewer values, or values that carry more",
    );
  });

  it("REST and gRPC: elements carrying next to nothing are refused alike, naming where", async () => {
    // 60,000 files of six characters of parsed data: 10 bytes each in binary, about 130 decoded.
    // In JSON, spaced out to 40 bytes each, which the count before parsing allows.
    const files = Array.from({ length: 60_000 }, () => ({ parsedData: "abcdef" }));
    const spaced = `{"text":"hi","files":[${files.map((f) => `{ "parsedData" : "${f.parsedData}"${" ".repeat(14)}}`).join(",")}]}`;
    expect(spaced.length / files.length).toBeGreaterThan(40);
    const rest = await post(spaced);
    expect(rest.status).toBe(400);
    const message = create(PostMessageRequestSchema, { sessionId, text: "hi", files });
    const bytes = toBinary(PostMessageRequestSchema, message).length;
    const expected =
      `request: the message would take more than ${decodedSizeLimit(bytes)} bytes once decoded ` +
      `(8 times its ${bytes} bytes, and 1048576), passing it in files[].parsed_data: send fewer elements, or elements that carry values`;
    expect(rest.json.detail).toBe(expected);
    const grpcError = await sessions.call(SessionService.method.postMessage, message).then(
      () => undefined,
      (e: { code: number; details: string }) => e,
    );
    // grpc-js undoes grpc-message's percent-encoding with decodeURI, which leaves `:` and `,` encoded.
    expect({ code: grpcError?.code, details: decodeURIComponent(grpcError?.details ?? "") }).toEqual({
      code: 3,
      details: expected,
    });
  });

  it("ordinary messages of the same method are taken, over REST and gRPC", async () => {
    const files = Array.from({ length: 20 }, (_, i) => ({
      name: `notes-${i}.md`,
      path: `docs/notes-${i}.md`,
      data: `# Notes ${i}\n\nSome text of the file.`,
    }));
    const rest = await post({ text: "Read these", files });
    expect(rest.json).toMatchObject({ messageId: expect.any(String) });
    expect(rest.status).toBe(200);
    const posted = await sessions.call(SessionService.method.postMessage, { sessionId, text: "And these", files });
    expect(posted.messageId).not.toBe("");
  });
});
