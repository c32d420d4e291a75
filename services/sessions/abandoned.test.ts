// Abandoned calls (the client left, or the deadline passed) get no more work: the handlers check
// their signal once a database connection is free and before each further step.
import { create, type DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionService } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import { sessionServiceDeps } from "../../test/support/session-deps.js";
import { abortedSignal, codeOf, directCallContext } from "../../test/support/abandoned.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { createOrganization, createUser } from "../organization/queries.js";
import type { Principal } from "../platform/context.js";
import { onConnection, stopIfAbandoned } from "../platform/abandoned.js";
import { createSessionService } from "./handlers.js";
import { insertSession } from "./session-queries.js";

describe("abandoned calls", () => {
  let database: TestDatabase<Database>;
  let principal: Principal;
  let sessionId: string;
  let service: ReturnType<typeof createSessionService>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    const db = database.db;
    const orgId = (await createOrganization(db, { name: "Abandoned" })).id;
    const userId = (await createUser(db, { orgId, email: "owner@abandoned.test", role: "owner" })).id;
    principal = {
      orgId,
      userId,
      role: "owner",
      credentialKind: "api_key",
      credentialId: "key:owner",
      rateLimitPerMinute: 10_000,
    };
    sessionId = (
      await insertSession(db, {
        orgId,
        userId,
        parentSessionId: null,
        title: "t",
        computerId: null,
        settings: {},
        client: "web",
        autonomyMode: "manual",
      })
    ).id;
    service = createSessionService(sessionServiceDeps(db));
  });
  afterAll(() => database?.drop());

  const context = (method: DescMethod, signal: AbortSignal) => directCallContext(method, principal, signal);

  it("keeps a deadline's own error and answers Canceled for a client that left", () => {
    const deadline = new ConnectError("too slow", Code.DeadlineExceeded);
    expect(() => stopIfAbandoned(abortedSignal(deadline))).toThrow(deadline);
    expect(() => stopIfAbandoned(abortedSignal(new Error("client disconnected")))).toThrow(
      expect.objectContaining({ code: Code.Canceled }),
    );
    expect(() => stopIfAbandoned(new AbortController().signal)).not.toThrow();
  });

  it("does not start work on a connection for an abandoned call", async () => {
    let ran = false;
    const work = async () => {
      ran = true;
      return 1;
    };
    expect(await codeOf(onConnection(database.db, abortedSignal(), work))).toBe(Code.Canceled);
    expect(ran).toBe(false);
    expect(await onConnection(database.db, new AbortController().signal, work)).toBe(1);
  });

  it("stores nothing for an abandoned POST, and reads nothing for an abandoned GET", async () => {
    const post = create(SessionService.method.postMessage.input, { sessionId, text: "hello" });
    expect(await codeOf(service.postMessage!(post, context(SessionService.method.postMessage, abortedSignal())))).toBe(
      Code.Canceled,
    );
    const row = await database.db
      .selectFrom("sessions")
      .select(["message_count", "status"])
      .where("id", "=", sessionId)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ message_count: 0, status: "idle" });

    const get = create(SessionService.method.getSession.input, { sessionId });
    expect(await codeOf(service.getSession!(get, context(SessionService.method.getSession, abortedSignal())))).toBe(
      Code.Canceled,
    );
    const list = create(SessionService.method.listSessions.input, {});
    expect(
      await codeOf(service.listSessions!(list, context(SessionService.method.listSessions, abortedSignal()))),
    ).toBe(Code.Canceled);

    // The same calls, not abandoned, go through.
    expect(
      await service.postMessage!(post, context(SessionService.method.postMessage, new AbortController().signal)),
    ).toMatchObject({ status: "pending" });
    expect(
      await service.getSession!(get, context(SessionService.method.getSession, new AbortController().signal)),
    ).toMatchObject({ sessionId, messageCount: 1 });
  });
});
