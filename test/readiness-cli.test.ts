// `agentplane readiness submit FILE.json --org ID` and `agentplane readiness repos --org ID` as a
// user runs them (a subprocess against the test database), and the readiness demo writer.
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { createOrganization } from "../services/organization/queries.js";
import { writeReadinessDemo } from "../services/readiness/demo.js";
import { createTestDatabase, type TestDatabase } from "./support/database.js";

const run = promisify(execFile);

describe("agentplane readiness", () => {
  let database: TestDatabase<Database>;
  let dir: string;
  let orgId: string;

  async function agentplane(...args: string[]) {
    try {
      const { stdout, stderr } = await run(process.execPath, ["bin/agentplane.js", ...args], {
        env: { ...process.env, LOG_LEVEL: "silent", DATABASE_URL: database.url },
        timeout: 60_000,
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  async function file(name: string, content: unknown): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, typeof content === "string" ? content : JSON.stringify(content));
    return path;
  }

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    dir = await mkdtemp(join(tmpdir(), "readiness-cli-"));
    orgId = (await createOrganization(database.db, { name: "CLI readiness" })).id;
  });
  afterAll(async () => {
    await database?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("submits a report file and lists the repository (--json and text)", async () => {
    const report = {
      repoUrl: "git@github.com:Acme/Service.git",
      createdAt: Date.UTC(2026, 0, 15),
      apps: { ".": { description: "the service" } },
      report: {
        readme: { numerator: 1, denominator: 1, rationale: "fine", appPaths: ["."] },
        tests: { numerator: 0, denominator: 1, rationale: "none" },
      },
      branch: "main",
      modelUsed: { id: "m", reasoningEffort: "low" },
    };
    const submitted = await agentplane(
      "readiness",
      "submit",
      await file("good.json", report),
      "--org",
      orgId,
      "--json",
    );
    expect(submitted.stderr).toBe("");
    expect(submitted.code).toBe(0);
    const { reportId, repoId } = JSON.parse(submitted.stdout);
    expect(reportId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

    const repos = await agentplane("readiness", "repos", "--org", orgId, "--json");
    expect(repos.code).toBe(0);
    const { repositories } = JSON.parse(repos.stdout);
    expect(repositories).toHaveLength(1);
    expect(repositories[0]).toMatchObject({ id: repoId, url: "https://github.com/Acme/Service", reportCount: 1 });
    expect(repositories[0].latestReport).toMatchObject({
      reportId,
      createdAt: report.createdAt,
      repoUrl: report.repoUrl,
      branch: "main",
      score: 0.5,
      modelUsed: report.modelUsed,
    });

    const text = await agentplane("readiness", "repos", "--org", orgId);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(
      `${repoId}  https://github.com/Acme/Service  reports=1  latest=2026-01-15T00:00:00.000Z  score=50%`,
    );
  }, 120_000);

  it("rejects a bad file with every problem on one line and stores nothing", async () => {
    const bad = await agentplane(
      "readiness",
      "submit",
      await file("bad.json", {
        reportId: "nope",
        repoUrl: "https://github.com/Acme/Never",
        apps: {},
        report: {
          a: { numerator: "2", denominator: 1, rationale: "" },
          b: { numerator: 3, denominator: 2, rationale: "", appPaths: ["web"] },
        },
        modelUsed: { id: "m", reasoningEffort: "turbo" },
      }),
      "--org",
      orgId,
    );
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe("");
    const lines = bad.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    for (const part of [
      "report.a.numerator: must be a number",
      "reportId: must be a UUID",
      "report.b.numerator: must not exceed",
      'report.b.appPaths[0]: "web" is not a key of apps',
      "modelUsed.reasoningEffort: must be one of",
    ]) {
      expect(lines[0]).toContain(part);
    }
    const count = await database.db
      .selectFrom("readiness_repositories")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("org_id", "=", orgId)
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1);
  }, 120_000);

  it("explains usage mistakes and unreadable files in one line", async () => {
    const noOrg = await agentplane("readiness", "submit", "x.json", "--json");
    expect(noOrg.code).toBe(2);
    expect(JSON.parse(noOrg.stdout)).toEqual({ error: "--org is required" });
    const noFile = await agentplane("readiness", "submit", join(dir, "missing.json"), "--org", orgId);
    expect(noFile.code).toBe(1);
    expect(noFile.stderr).toMatch(/cannot read .*missing\.json: ENOENT/);
    const notJson = await agentplane("readiness", "submit", await file("broken.json", "{ nope"), "--org", orgId);
    expect(notJson.stderr).toMatch(/broken\.json is not valid JSON/);
  }, 120_000);

  it("the demo writes several reports over time for a few repositories, once", async () => {
    const demoOrg = (await createOrganization(database.db, { name: "Demo readiness" })).id;
    await writeReadinessDemo(database.db, demoOrg, { days: 30, users: 0 });
    await writeReadinessDemo(database.db, demoOrg, { days: 30, users: 0 });
    const rows = await database.db
      .selectFrom("readiness_reports")
      .select(["repository_id", "created_at"])
      .where("org_id", "=", demoOrg)
      .orderBy("created_at")
      .execute();
    const perRepository = new Map<string, number>();
    for (const r of rows) perRepository.set(r.repository_id, (perRepository.get(r.repository_id) ?? 0) + 1);
    expect(perRepository.size).toBe(3);
    expect([...perRepository.values()].every((n) => n >= 4)).toBe(true);
    expect(rows.length).toBe(15);
    const span = rows[rows.length - 1]!.created_at.getTime() - rows[0]!.created_at.getTime();
    expect(span).toBeGreaterThan(14 * 86_400_000);
    expect(rows[rows.length - 1]!.created_at.getTime()).toBeLessThan(Date.now());
  });
});
