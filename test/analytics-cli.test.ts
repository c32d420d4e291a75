// `agentplane ingest`, `rollup` and `multiplier`, run in-process against a test database (the
// same Command objects bin/agentplane.js dispatches to).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { ANALYTICS_COMMANDS } from "../services/cli/analytics-commands.js";
import type { CommandContext } from "../services/cli/commands.js";
import { UsageError } from "../services/cli/output.js";
import { loadConfig } from "../services/config.js";
import { createTestDatabase, testLogger, type TestDatabase } from "./support/database.js";
import { createTestOrg, createTestUser } from "./support/fixtures.js";

let database: TestDatabase<Database>;
let dir: string;
let orgId: string;
let userId: string;

async function run(
  words: string,
  args: string[],
  options: CommandContext["options"] = {},
): Promise<Record<string, any>> {
  let answer: Record<string, unknown> | undefined;
  const ctx: CommandContext = {
    config: loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: "silent" }),
    logger: testLogger(),
    out: { json: true, result: (value) => void (answer = value) },
    options,
    args,
  };
  await ANALYTICS_COMMANDS[words]!.run(ctx);
  return answer!;
}

beforeAll(async () => {
  database = await createTestDatabase<Database>(migrations);
  orgId = await createTestOrg(database.db, "CLI");
  userId = (await createTestUser(database.db, orgId, "owner")).userId;
  dir = await mkdtemp(join(tmpdir(), "agentplane-analytics-"));
}, 60_000);

afterAll(async () => {
  await database?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("agentplane ingest", () => {
  it("stores the valid lines and reports each rejected one with its line number", async () => {
    const ok = {
      type: "tool_call",
      time: "2026-04-02T10:00:00Z",
      org_id: orgId,
      user_id: userId,
      client: "terminal-ui",
      tool: "Read",
      autonomy_level: "auto-high",
      event_id: "cli-1",
    };
    const lines = [
      JSON.stringify(ok),
      JSON.stringify(ok), // duplicate event_id
      "",
      "{not json",
      JSON.stringify({ ...ok, event_id: "cli-2", colour: "blue" }),
      JSON.stringify({ ...ok, event_id: "cli-3", autonomy_level: "spec" }),
      JSON.stringify({ ...ok, event_id: "cli-4", type: "message", role: "user" }),
      "[1, 2]",
    ];
    const file = join(dir, "events.jsonl");
    await writeFile(file, `${lines.join("\n")}\n`);
    const answer = await run("ingest", [file]);
    expect(answer).toMatchObject({ events: 7, accepted: 2, duplicates: 1, rejected: 4 });
    expect(answer.rejections.map((r: { line: number }) => r.line)).toEqual([4, 5, 6, 8]);
    expect(answer.rejections[1].reason).toMatch(/colour/);
    expect(answer.rejections[2].reason).toMatch(/^autonomy_level: /);

    // Again: everything with an event_id is a duplicate now.
    expect(await run("ingest", [file])).toMatchObject({ accepted: 0, duplicates: 3, rejected: 4 });
  });

  it("needs a file", async () => {
    await expect(run("ingest", [])).rejects.toBeInstanceOf(UsageError);
    await expect(run("ingest", [join(dir, "missing.jsonl")])).rejects.toThrow(/cannot read/);
  });
});

describe("agentplane rollup", () => {
  it("recomputes a day or a range on demand", async () => {
    expect(await run("rollup", [], { date: "2026-04-02", org: orgId })).toMatchObject({
      from: "2026-04-02",
      to: "2026-04-02",
      days: 1,
      events: 2,
    });
    const row = await sql<{ tool_calls: number; user_messages: number }>`
      select tool_calls, user_messages from analytics_daily where org_id = ${orgId} and day = '2026-04-02'`.execute(
      database.db,
    );
    expect(row.rows).toEqual([{ tool_calls: 1, user_messages: 1 }]);
    expect(await run("rollup", [], { from: "2026-04-01", to: "2026-04-03" })).toMatchObject({ days: 3, events: 2 });
  });

  it("rejects conflicting or impossible dates", async () => {
    await expect(
      run("rollup", [], { date: "2026-04-02", from: "2026-04-01", to: "2026-04-03" }),
    ).rejects.toBeInstanceOf(UsageError);
    await expect(run("rollup", [], { from: "2026-04-01" })).rejects.toThrow(/--from and --to go together/);
    await expect(run("rollup", [], { date: "2099-01-01" })).rejects.toThrow(/^--date: must not be after/);
  });
});

describe("agentplane multiplier", () => {
  it("sets, lists and removes credit multipliers", async () => {
    expect(await run("multiplier set", ["gpt-5", "1.5"])).toEqual({ modelId: "gpt-5", multiplier: 1.5 });
    expect((await run("multiplier list", [])).multipliers).toEqual([{ model_id: "gpt-5", multiplier: 1.5 }]);
    expect(await run("multiplier unset", ["gpt-5"])).toEqual({ modelId: "gpt-5", removed: true });
    await expect(run("multiplier set", ["gpt-5", "lots"])).rejects.toBeInstanceOf(UsageError);
  });
});

describe("agentplane price", () => {
  const prices = { input: "3", output: "15", "cache-read": "0.3", "cache-write": "3.75" };

  it("sets, lists, replaces and removes model prices", async () => {
    expect(await run("price list", [])).toEqual({ prices: [] });
    expect(await run("price set", ["claude-x"], prices)).toEqual({
      modelId: "claude-x",
      input_per_million: 3,
      output_per_million: 15,
      cache_read_per_million: 0.3,
      cache_write_per_million: 3.75,
    });
    await run("price set", ["claude-x"], { ...prices, output: "12.5" });
    await run("price set", ["a-model"], { input: "0", output: "0", "cache-read": "0", "cache-write": "0" });
    expect((await run("price list", [])).prices).toEqual([
      {
        model_id: "a-model",
        input_per_million: 0,
        output_per_million: 0,
        cache_read_per_million: 0,
        cache_write_per_million: 0,
      },
      {
        model_id: "claude-x",
        input_per_million: 3,
        output_per_million: 12.5,
        cache_read_per_million: 0.3,
        cache_write_per_million: 3.75,
      },
    ]);
    expect(await run("price remove", ["claude-x"])).toEqual({ modelId: "claude-x", removed: true });
    expect(await run("price remove", ["claude-x"])).toEqual({ modelId: "claude-x", removed: false });
    expect((await run("price list", [])).prices.map((p: { model_id: string }) => p.model_id)).toEqual(["a-model"]);
  });

  it("refuses a missing or malformed price, naming the option", async () => {
    await expect(run("price set", [], prices)).rejects.toBeInstanceOf(UsageError);
    await expect(run("price set", ["m", "extra"], prices)).rejects.toBeInstanceOf(UsageError);
    const { "cache-write": _, ...withoutCacheWrite } = prices;
    await expect(run("price set", ["m"], withoutCacheWrite)).rejects.toThrow(/^--cache-write is required/);
    for (const bad of ["-1", "abc", "1e3", "", "0x10", "NaN"])
      await expect(run("price set", ["m"], { ...prices, input: bad })).rejects.toThrow(/^--input must be a number/);
    await expect(run("price set", ["m"], { ...prices, output: true })).rejects.toThrow(/^--output is required/);
    expect((await run("price list", [])).prices.map((p: { model_id: string }) => p.model_id)).not.toContain("m");
  });
});
