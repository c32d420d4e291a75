// A body field that names the field a path variable binds (sessionId, computerId) never acts on
// another resource than the path names, through the REST edge as through Envoy with
// reject_binding_body_field_collisions (services/edge/collisions.ts): under the field's proto name
// with another value it is a 400 naming the field; under its JSON name it gives way to the path.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionRunnerService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import {
  api,
  createTestOrg,
  createTestUser,
  type TestUser,
  bearer,
  createTestServiceAccount,
} from "./support/fixtures.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { startTestServer, type TestServer } from "./support/server.js";

describe("body fields naming a path variable's field", () => {
  let server: TestServer;
  let owner: TestUser;
  let runner: GrpcCaller;

  beforeAll(async () => {
    server = await startTestServer();
    owner = await createTestUser(server.platform.db, await createTestOrg(server.platform.db, "Path bindings"), "owner");
    runner = grpcClient(
      SessionRunnerService,
      server.internalGrpcUrl,
      bearer(await createTestServiceAccount(server.platform.db)),
    );
  });
  afterAll(async () => {
    runner?.close();
    await server?.close();
  });

  const call = (method: string, path: string, body: unknown) => api(server.restUrl, owner.key, path, { method, body });
  const session = async () =>
    (await runner.call(SessionRunnerService.method.createSession, { orgId: owner.orgId, userId: owner.userId }))
      .sessionId;
  const computer = async (name: string) =>
    (
      await call("POST", "/api/v0/computers", {
        name: `${name}-${Math.random().toString(36).slice(2, 8)}`,
        remoteUser: "dev",
      })
    ).json.id as string;
  const settingsOf = async (id: string) =>
    (await call("GET", `/api/v0/sessions/${id}`, undefined)).json.sessionSettings;
  const messagesOf = async (id: string) =>
    (await call("GET", `/api/v0/sessions/${id}/messages`, undefined)).json.messages.map(
      (m: { content: { text: string }[] }) => m.content[0]!.text,
    );

  function expectConflict(res: { status: number; json: any }, field: string, bound: string, given: string) {
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      title: "Bad Request",
      detail: `The binding value "${bound}" of the field ${field} is conflicting with the value "${given}" in the body.`,
      status: 400,
      requestId: expect.any(String),
    });
  }

  it("PATCH /sessions/{sessionId}: another session named in the body is never the one changed", async () => {
    const [a, b] = [await session(), await session()];
    expectConflict(
      await call("PATCH", `/api/v0/sessions/${a}`, { session_id: b, sessionSettings: { model: "proto-name" } }),
      "session_id",
      a,
      b,
    );
    expect((await settingsOf(a)).model).toBeUndefined();
    const res = await call("PATCH", `/api/v0/sessions/${a}`, { sessionId: b, sessionSettings: { model: "json-name" } });
    expect(res.status).toBe(200);
    expect(res.json.sessionId).toBe(a);
    expect((await settingsOf(a)).model).toBe("json-name");
    expect((await settingsOf(b)).model).toBeUndefined();
    // The path's own ID under either name is no collision.
    expect(
      (await call("PATCH", `/api/v0/sessions/${a}`, { session_id: a, sessionSettings: { model: "same" } })).status,
    ).toBe(200);
  });

  it("POST /sessions/{sessionId}/messages: the message goes to the path's session", async () => {
    const [a, b] = [await session(), await session()];
    expectConflict(
      await call("POST", `/api/v0/sessions/${a}/messages`, { session_id: b, text: "proto name" }),
      "session_id",
      a,
      b,
    );
    expect((await call("POST", `/api/v0/sessions/${a}/messages`, { sessionId: b, text: "json name" })).status).toBe(
      200,
    );
    expect(await messagesOf(a)).toEqual(["json name"]);
    expect(await messagesOf(b)).toEqual([]);
  });

  it("PATCH /computers/{computerId}: the path's computer is the one changed", async () => {
    const [a, b] = [await computer("a"), await computer("b")];
    expectConflict(
      await call("PATCH", `/api/v0/computers/${a}`, { computer_id: b, remoteUser: "proto" }),
      "computer_id",
      a,
      b,
    );
    const res = await call("PATCH", `/api/v0/computers/${a}`, { computerId: b, remoteUser: "jsonname" });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: a, remoteUser: "jsonname" });
    expect(
      (await call("GET", `/api/v0/computers/name/${encodeURIComponent(res.json.name)}`, undefined)).json.remoteUser,
    ).toBe("jsonname");
    const other = await server.platform.db
      .selectFrom("computers")
      .select("remote_user")
      .where("id", "=", b)
      .executeTakeFirstOrThrow();
    expect(other.remote_user).toBe("dev");
  });
});
