// The agentplane command as a user runs it: a subprocess against the same database as the tests.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { hashApiKey } from "../services/organization/queries.js";
import { createTestDatabase, type TestDatabase } from "./support/database.js";

const run = promisify(execFile);

async function agentplane(env: Record<string, string>, ...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, ["bin/agentplane.js", ...args], {
      env: { ...process.env, LOG_LEVEL: "silent", ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("agentplane CLI", () => {
  let database: TestDatabase<Database>;
  let env: Record<string, string>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    env = { DATABASE_URL: database.url };
  });
  afterAll(() => database?.drop());

  it("creates an organization, a user and a key (--json), storing only the key's hash", async () => {
    const org = await agentplane(env, "org", "create", "--name", "CLI Org", "--json");
    expect(org.code).toBe(0);
    const { id: orgId } = JSON.parse(org.stdout);
    const user = await agentplane(
      env,
      "user",
      "create",
      "--org",
      orgId,
      "--email",
      "cli@example.test",
      "--role",
      "manager",
      "--first-name",
      "Cli",
      "--json",
    );
    expect(user.code).toBe(0);
    const { id: userId, role } = JSON.parse(user.stdout);
    expect(role).toBe("manager");
    const key = await agentplane(env, "key", "create", "--user", userId, "--json");
    expect(key.code).toBe(0);
    const parsed = JSON.parse(key.stdout);
    expect(parsed.key).toMatch(/^apk_[A-Za-z0-9_-]{43}$/);
    const rows = await database.db
      .selectFrom("api_keys")
      .select(["key_hash", "user_id"])
      .where("user_id", "=", userId)
      .execute();
    expect(rows).toEqual([{ key_hash: hashApiKey(parsed.key), user_id: userId }]);
    expect(JSON.stringify(rows)).not.toContain(parsed.key);
  }, 120_000);

  it("prints the bare id without --json, for shell use", async () => {
    const org = await agentplane(env, "org", "create", "--name", "Plain");
    expect(org.code).toBe(0);
    expect(org.stdout.trim()).toMatch(/^[0-9a-f-]{36}$/);
  }, 60_000);

  it("fails with a one-line reason and a non-zero exit on bad input", async () => {
    const bad = await agentplane(
      env,
      "user",
      "create",
      "--org",
      "nope",
      "--email",
      "x@example.test",
      "--role",
      "emperor",
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toMatch(/--role must be one of owner, manager, member, guest/);
    const unknown = await agentplane(env, "frobnicate", "--json");
    expect(unknown.code).not.toBe(0);
    expect(JSON.parse(unknown.stdout)).toEqual({ error: expect.stringMatching(/unknown command/) });
    // A malformed option line is a usage error in one line (exit 2), not a stack trace.
    for (const args of [
      ["org", "create", "--bogus"],
      ["org", "create", "--name"],
    ]) {
      const malformed = await agentplane(env, ...args);
      expect(malformed.code).toBe(2);
      expect(malformed.stderr.trim().split("\n")).toHaveLength(1);
      expect(malformed.stderr).toMatch(
        /^agentplane: (Unknown option '--bogus'|Option '--name <value>' argument missing)/,
      );
    }
    const malformedJson = await agentplane(env, "org", "create", "--bogus", "--json");
    expect(JSON.parse(malformedJson.stdout)).toEqual({ error: expect.stringMatching(/Unknown option '--bogus'/) });
    const missing = await agentplane(env, "key", "create", "--user", "00000000-0000-4000-8000-000000000000");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/user .* not found/);
  }, 60_000);

  it("creates, lists and revokes service accounts, storing only the token's hash", async () => {
    const org = JSON.parse((await agentplane(env, "org", "create", "--name", "Workloads", "--json")).stdout)
      .id as string;
    const created = await agentplane(
      env,
      "service-account",
      "create",
      "--name",
      "runner-1",
      "--scopes",
      "sessions.runner,analytics.ingest",
      "--org",
      org,
      "--json",
    );
    expect(created.code).toBe(0);
    const account = JSON.parse(created.stdout);
    expect(account).toMatchObject({
      name: "runner-1",
      orgId: org,
      scopes: ["sessions.runner", "analytics.ingest"],
      revokedAt: null,
    });
    expect(account.token).toMatch(/^aps_[A-Za-z0-9_-]{43}$/);
    const rows = await database.db.selectFrom("service_accounts").selectAll().where("id", "=", account.id).execute();
    expect(rows.map((r) => r.token_hash)).toEqual([hashApiKey(account.token)]);
    expect(JSON.stringify(rows)).not.toContain(account.token);
    // Without --json the token alone, for shell use.
    const plain = await agentplane(
      env,
      "service-account",
      "create",
      "--name",
      "platform-rollup",
      "--scopes",
      "analytics.rollup",
    );
    expect(plain.stdout.trim()).toMatch(/^aps_[A-Za-z0-9_-]{43}$/);

    const listed = JSON.parse((await agentplane(env, "service-account", "list", "--org", org, "--json")).stdout);
    expect(listed.accounts.map((a: { id: string }) => a.id)).toEqual([account.id]);
    expect(JSON.stringify(listed)).not.toContain(account.token);
    expect(JSON.stringify(listed)).not.toContain(rows[0]!.token_hash);

    expect((await agentplane(env, "service-account", "revoke", account.id)).code).toBe(0);
    expect(
      JSON.parse((await agentplane(env, "service-account", "list", "--org", org, "--json")).stdout).accounts[0]
        .revokedAt,
    ).not.toBeNull();
    const again = await agentplane(env, "service-account", "revoke", account.id);
    expect([again.code, again.stderr.trim()]).toEqual([1, `agentplane: no live service account ${account.id}`]);
  }, 120_000);

  it("refuses unknown scopes and organizations, naming them", async () => {
    const scope = await agentplane(env, "service-account", "create", "--name", "x", "--scopes", "sessions.runner,root");
    expect([scope.code, scope.stderr]).toEqual([
      2,
      expect.stringMatching(/--scopes: unknown scope "root" \(known: analytics.ingest, .*sessions.runner\)/),
    ]);
    const org = await agentplane(
      env,
      "service-account",
      "create",
      "--name",
      "x",
      "--scopes",
      "sessions.runner",
      "--org",
      "nope",
    );
    expect([org.code, org.stderr.trim()]).toEqual([1, "agentplane: organization nope not found"]);
    const help = await agentplane(env, "--help");
    // Every scope the services declare is listed in --help.
    for (const s of [
      "sessions.runner",
      "computers.host",
      "analytics.ingest",
      "analytics.rollup",
      "readiness.submit",
      "organization.credits",
    ])
      expect(help.stdout).toContain(s);
  }, 60_000);
});
