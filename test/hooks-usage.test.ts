// Usage reporting from `agentplane hook notify` to the real server: one `hook` telemetry event
// through TelemetryService/Ingest (Connect over HTTP/2 on the services' port), stored for the
// analytics rollup. A rejected event or an unreachable server is logged, and the hook still exits 0.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOOK_COMMAND } from "../services/cli/hooks/usage.js";
import { createTestOrg, createTestUser, type TestUser } from "./support/fixtures.js";
import { startTestServer, type TestServer } from "./support/server.js";

function notify(stdin: string, env: Record<string, string>): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["bin/agentplane.js", "hook", "notify"], {
      env,
      stdio: ["pipe", "ignore", "ignore"],
    });
    child.on("error", reject);
    child.on("close", resolve);
    child.stdin.end(stdin);
  });
}

describe("hook usage reporting", () => {
  let server: TestServer;
  let user: TestUser;
  let home: string;

  beforeAll(async () => {
    server = await startTestServer();
    const orgId = await createTestOrg(server.platform.db, "Hooks Org");
    user = await createTestUser(server.platform.db, orgId, "member");
    home = mkdtempSync(join(tmpdir(), "hook-usage-"));
  }, 60_000);
  afterAll(() => server?.close());

  const env = (extra: Record<string, string>) => ({
    PATH: process.env.PATH ?? "",
    HOME: home,
    AGENTPLANE_HOOK_DESKTOP: "0",
    AGENTPLANE_HOOK_DEADLINE_MS: "8000",
    AGENTPLANE_USAGE_URL: server.internalGrpcUrl,
    AGENTPLANE_API_KEY: user.key,
    AGENTPLANE_ORG_ID: user.orgId,
    AGENTPLANE_USER_ID: user.userId,
    ...extra,
  });

  it("stores one hook event per execution", async () => {
    const code = await notify(
      JSON.stringify({ hook_event_name: "Stop", session_id: "usage-s1", cwd: "/w/api" }),
      env({ AGENTPLANE_USER_EMAIL: user.email }),
    );
    expect(code).toBe(0);
    const rows = await server.platform.db
      .selectFrom("analytics_events")
      .select([
        "type",
        "user_id",
        "user_email",
        "session_id",
        "client",
        "hook_event",
        "hook_matcher",
        "hook_command",
        "event_id",
      ])
      .where("org_id", "=", user.orgId)
      .execute();
    expect(rows).toEqual([
      {
        type: "hook",
        user_id: user.userId,
        user_email: user.email,
        session_id: "usage-s1",
        client: "terminal-ui",
        hook_event: "Stop",
        hook_matcher: "",
        hook_command: HOOK_COMMAND,
        event_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      },
    ]);
  }, 30_000);

  it("logs a refused event (a user other than the key's) and an unreachable ingest, exiting 0", async () => {
    const log = join(home, "usage.log");
    const stranger = await createTestUser(
      server.platform.db,
      await createTestOrg(server.platform.db, "Other"),
      "member",
    );
    expect(
      await notify(
        JSON.stringify({ hook_event_name: "SessionEnd", reason: "other" }),
        env({ AGENTPLANE_USER_ID: stranger.userId, AGENTPLANE_HOOK_LOG: log }),
      ),
    ).toBe(0);
    expect(
      await notify(
        JSON.stringify({ hook_event_name: "Stop" }),
        env({ AGENTPLANE_USAGE_URL: "http://127.0.0.1:1", AGENTPLANE_HOOK_LOG: log }),
      ),
    ).toBe(0);
    const lines = readFileSync(log, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, string>);
    expect(lines).toEqual([
      // A user's API key ingests its own user's events only.
      expect.objectContaining({
        msg: "usage failed",
        event: "SessionEnd",
        error: expect.stringMatching(
          /^ingest answered HTTP 403 permission_denied: events\[0\]\.user_id: an API key may ingest only its own user's events/,
        ),
      }),
      expect.objectContaining({ msg: "usage failed", event: "Stop", error: expect.stringContaining("ECONNREFUSED") }),
    ]);
    const stored = await server.platform.db
      .selectFrom("analytics_events")
      .select("user_id")
      .where("org_id", "=", user.orgId)
      .execute();
    expect(stored.map((r) => r.user_id)).not.toContain(stranger.userId);
  }, 30_000);
});
