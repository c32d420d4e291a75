// Runners you can see (issue 20, item 5): the demo runner a one-process server runs by default
// (a posted message goes pending → running → idle, a reply that says it comes from the demo
// runner appears, the event stream shows each step and a webhook fires), and `agentplane
// runner --exec`, a runner in its own process with a workload credential.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listServiceAccounts } from "../services/organization/service-accounts.js";
import { DEMO_REPLY_PREFIX } from "../services/sessions/runner/answers.js";
import { DEMO_RUNNER_ACCOUNT } from "../services/sessions/runner/demo-runner.js";
import { api, createTestOrg, createTestServiceAccount, createTestUser, type TestUser } from "./support/fixtures.js";
import { startTestServer, type TestServer } from "./support/server.js";

async function until<T>(get: () => Promise<T | undefined>, what: string, ms = 15_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await get();
    if (value !== undefined) return value;
    if (Date.now() - started > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the demo runner (DEMO_RUNNER=true, the embedded default)", () => {
  let server: TestServer;
  let member: TestUser;
  let owner: TestUser;
  const hooks: string[] = [];
  let receiver: ReturnType<typeof createServer>;

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        hooks.push(body);
        res.end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    server = await startTestServer({ DEMO_RUNNER: "true", WORKERS: "true", WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" });
    const orgId = await createTestOrg(server.database.db, "Demo runner");
    member = await createTestUser(server.database.db, orgId, "member");
    owner = await createTestUser(server.database.db, orgId, "owner");
  });
  afterAll(async () => {
    await server?.close();
    receiver?.close();
  });

  it("answers a posted message: pending → running → idle, a reply that says what it is, the events, a webhook", async () => {
    const port = (receiver.address() as AddressInfo).port;
    const hook = await api(server.restUrl, owner.key, "/api/v0/webhooks", {
      method: "POST",
      body: { url: `http://127.0.0.1:${port}/`, events: ["message.created"] },
    });
    expect(hook.status).toBe(201);
    const created = await api(server.restUrl, member.key, "/api/v0/sessions", {
      method: "POST",
      body: { title: "First try", text: "What can you do?" },
    });
    expect(created.json.status).toBe("pending");
    const id = created.json.sessionId as string;
    const reply = await until(async () => {
      const { json } = await api(server.restUrl, member.key, `/api/v0/sessions/${id}/messages`);
      return json.messages.length >= 2 ? json.messages[1] : undefined;
    }, "the reply");
    expect(reply.content[0].text.startsWith(DEMO_REPLY_PREFIX)).toBe(true);
    expect(reply.content[0].text).toContain("What can you do?");
    expect(reply.parentId).toBe(
      (await api(server.restUrl, member.key, `/api/v0/sessions/${id}/messages`)).json.messages[0].id,
    );
    const session = await until(async () => {
      const { json } = await api(server.restUrl, member.key, `/api/v0/sessions/${id}`);
      return json.status === "idle" ? json : undefined;
    }, "idle");
    expect(session.completedAt).toEqual(expect.any(Number));
    // The event stream from the start: every step, in order.
    const controller = new AbortController();
    const res = await fetch(`${server.restUrl}/api/v0/sessions/${id}/events?after=0`, {
      headers: { authorization: `Bearer ${member.key}` },
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    let text = "";
    while (!text.includes("id: 5\n")) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    const events = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!));
    expect(events.map((e) => e.status ?? `message:${e.role}`)).toEqual([
      "message:user",
      "pending",
      "running",
      "message:assistant",
      "idle",
    ]);
    // The webhook: both messages.
    await until(async () => (hooks.length >= 2 ? true : undefined), "the webhooks");
    expect(hooks.map((h) => JSON.parse(h).data.role).sort()).toEqual(["assistant", "user"]);
  });

  it("runs with a credential of its own: one live account, scope sessions.runner (revoked at stop, replaced at start)", async () => {
    const accounts = await listServiceAccounts(server.database.db);
    const live = accounts.filter((a) => a.name === DEMO_RUNNER_ACCOUNT && a.revoked_at === null);
    expect(live).toHaveLength(1);
    expect(live[0]!.scopes).toEqual(["sessions.runner"]);
  });
});

describe("agentplane runner --exec", () => {
  let server: TestServer;
  let member: TestUser;
  let token: string;

  beforeAll(async () => {
    server = await startTestServer();
    const orgId = await createTestOrg(server.database.db, "CLI runner");
    member = await createTestUser(server.database.db, orgId, "member");
    token = await createTestServiceAccount(server.database.db, { orgId, scopes: ["sessions.runner"] });
  });
  afterAll(() => server?.close());

  function startRunner(exec: string) {
    const child = spawn(
      process.execPath,
      ["bin/agentplane.js", "runner", "--url", server.internalGrpcUrl, "--exec", exec, "--name", "cli-test"],
      { env: { ...process.env, AGENTPLANE_RUNNER_TOKEN: token, LOG_LEVEL: "info" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    return { child, exited, stderr: () => stderr };
  }
  const replyTo = async (text: string) => {
    const created = await api(server.restUrl, member.key, "/api/v0/sessions", { method: "POST", body: { text } });
    return until(
      async () => {
        const { json } = await api(server.restUrl, member.key, `/api/v0/sessions/${created.json.sessionId}/messages`);
        return json.messages.length >= 2 ? json.messages[1] : undefined;
      },
      "the reply",
      30_000,
    );
  };

  it("answers each run with the command's output, and stops on SIGTERM with exit 0", async () => {
    const r = startRunner("tr a-z A-Z");
    try {
      const reply = await replyTo("make this loud");
      expect(reply.content[0].text).toBe("MAKE THIS LOUD");
      expect(reply.isError).toBeUndefined();
      // The runner goes on: the next session too.
      const second = await replyTo("and this");
      expect(second.content[0].text).toBe("AND THIS");
    } finally {
      r.child.kill("SIGTERM");
    }
    expect(await r.exited).toBe(0);
  }, 60_000);

  it("a command that fails answers with an error message", async () => {
    const r = startRunner("echo broken >&2; exit 3");
    try {
      const reply = await replyTo("try");
      expect(reply.isError).toBe(true);
      expect(reply.content[0].text).toBe("The runner's command failed (exit 3).\n\nbroken\n");
    } finally {
      r.child.kill("SIGTERM");
    }
    expect(await r.exited).toBe(0);
  }, 60_000);

  it("refuses to start without a token in AGENTPLANE_RUNNER_TOKEN", async () => {
    const child = spawn(process.execPath, ["bin/agentplane.js", "runner"], {
      env: { ...process.env, AGENTPLANE_RUNNER_TOKEN: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
    expect(code).not.toBe(0);
    expect(stderr).toContain("AGENTPLANE_RUNNER_TOKEN");
  }, 30_000);
});
