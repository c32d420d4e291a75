// The provisioning worker over a real test database, against the local server that follows
// E2B's documented sandbox API: steps in order, failures, missing configuration, a stop in the
// middle of a step, and two workers sharing the queue.
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  startE2bApiTestServer,
  type CommandCall,
  type E2bApiTestServer,
} from "../../test/support/e2b-api-test-server.js";
import { createTestDatabase, testLogger, type TestDatabase } from "../../test/support/database.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { createOrganization } from "../organization/queries.js";
import type { E2bConfig } from "./config.js";
import type { Worker } from "../platform/module.js";
import { NOT_CONFIGURED } from "./provisioner.js";
import { startProvisioningWorker } from "./provisioning-worker.js";
import { deleteComputer, findComputer, insertComputer, listSteps } from "./queries.js";
import { planSteps } from "./steps.js";

const WEB = "https://github.com/acme/web.git";
const API = "https://github.com/acme/api.git";

async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("provisioning worker", () => {
  let database: TestDatabase<Database>;
  let e2b: E2bApiTestServer;
  let config: E2bConfig;
  let orgId: string;
  const workers: Worker[] = [];
  let seq = 0;

  /** null: E2B not configured. */
  const start = (e2bConfig: E2bConfig | null = config, leaseMs = 2_000, reapAgainAfterMs?: number) => {
    const worker = startProvisioningWorker({
      db: database.db,
      e2b: e2bConfig ?? undefined,
      logger: testLogger(),
      pollIntervalMs: 50,
      leaseMs,
      ...(reapAgainAfterMs === undefined ? {} : { reapAgainAfterMs }),
    });
    workers.push(worker);
    return worker;
  };
  const create = async (repos: string[], autoInstallDeps = true) => {
    const input = {
      name: `c${++seq}`,
      remoteUser: "ada",
      provider: "e2b" as const,
      hostId: null,
      repos,
      autoInstallDeps,
    };
    const steps = planSteps("e2b", repos, autoInstallDeps);
    return (await database.db.transaction().execute((trx) => insertComputer(trx, orgId, input, steps))).computer;
  };
  const settled = (id: string) =>
    waitFor(`computer ${id} to settle`, async () => {
      const c = await findComputer(database.db, orgId, id);
      return c && c.status !== "provisioning" ? c : undefined;
    });
  const commandsFor = (sandboxId: string | null) => e2b.commands.filter((c) => c.sandboxId === sandboxId);
  const describeCommand = (c: CommandCall) =>
    `${c.envs.REPO_URL ? "clone" : "install"} ${c.envs.REPO_URL ?? c.envs.REPO_DIR}`;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    e2b = await startE2bApiTestServer();
    config = { apiUrl: e2b.url, apiKey: e2b.apiKey, sandboxUrl: e2b.url, template: "agentplane-dev" };
    orgId = (await createOrganization(database.db, { name: "Provisioning" })).id;
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    e2b.onCommand = () => ({ exitCode: 0, stdout: "ok\n" });
    e2b.afterCreate = undefined;
  });
  afterAll(async () => {
    await e2b?.close();
    await database?.drop();
  });

  it("creates the sandbox, clones every repo and installs dependencies, recording each step", async () => {
    const computer = await create([WEB, API]);
    start();
    const done = await settled(computer.id);
    expect(done.status).toBe("active");
    expect(done.lease_owner).toBeNull();
    const steps = await listSteps(database.db, computer.id);
    expect(steps.map((s) => [s.name, s.status, s.attempts])).toEqual([
      ["Create the E2B sandbox", "succeeded", 1],
      [`Clone ${WEB}`, "succeeded", 1],
      [`Clone ${API}`, "succeeded", 1],
      ["Install dependencies of web", "succeeded", 1],
      ["Install dependencies of api", "succeeded", 1],
    ]);
    for (const s of steps) expect(s.completed_at!.getTime()).toBeGreaterThanOrEqual(s.started_at!.getTime());
    for (let i = 1; i < steps.length; i++)
      expect(steps[i]!.started_at!.getTime()).toBeGreaterThanOrEqual(steps[i - 1]!.completed_at!.getTime());

    const created = e2b.calls("POST /sandboxes").filter((r) => r.body.metadata.agentplaneComputerId === computer.id);
    expect(created).toHaveLength(1);
    expect(created[0]!.body).toMatchObject({
      templateID: "agentplane-dev",
      autoPause: true,
      metadata: { agentplaneComputerId: computer.id, agentplaneOrgId: orgId },
    });
    expect(done.sandbox_id).toMatch(/^i/);
    const commands = commandsFor(done.sandbox_id);
    expect(commands.map(describeCommand)).toEqual([`clone ${WEB}`, `clone ${API}`, "install web", "install api"]);
    expect(commands.every((c) => c.user === "ada" && c.cmd === "/bin/bash")).toBe(true);
  });

  const reapOf = (computerId: string) =>
    database.db
      .selectFrom("computer_sandbox_reaps")
      .selectAll()
      .where("computer_id", "=", computerId)
      .executeTakeFirst();
  const remove = (computerId: string) =>
    database.db.transaction().execute((trx) => deleteComputer(trx, orgId, computerId));

  it("stops a deleted computer's sandbox, and looks again for one a racing worker made after the first look", async () => {
    const computer = await create([WEB]);
    start(config, 2_000, 1_500);
    const done = await settled(computer.id);
    expect(e2b.sandboxes.has(done.sandbox_id!)).toBe(true);

    await remove(computer.id);
    await waitFor("the sandbox to be killed", async () => !e2b.sandboxes.has(done.sandbox_id!));
    expect(e2b.calls(`DELETE /sandboxes/${done.sandbox_id}`)).toHaveLength(1);
    // A worker still creating the sandbox when the computer was deleted: it appears after the
    // first look (paused here, as E2B lists it once its timeout passed, which E2B keeps).
    const late = "ilate0123456789";
    e2b.sandboxes.set(late, {
      sandboxID: late,
      templateID: "agentplane-dev",
      envdAccessToken: "t",
      metadata: { agentplaneComputerId: computer.id, agentplaneOrgId: orgId },
      startedAt: new Date().toISOString(),
      state: "paused",
    });
    expect(await reapOf(computer.id)).toBeDefined();
    await waitFor("the late sandbox to be killed", async () => !e2b.sandboxes.has(late));
    await waitFor("the reap to end", async () => (await reapOf(computer.id)) === undefined);
  });

  it("retries a failed stop, keeping E2B's reason meanwhile; a byom computer records nothing", async () => {
    const computer = await create([WEB]);
    start(config, 2_000, 0);
    const done = await settled(computer.id);
    e2b.failNext("DELETE /sandboxes/", 503, "try again later");
    await remove(computer.id);
    const failed = await waitFor("the failure to be recorded", async () => {
      const reap = await reapOf(computer.id);
      return reap?.last_error ? reap : undefined;
    });
    expect(failed.last_error).toContain("answered 503: try again later");
    expect(failed.next_attempt_at.getTime()).toBeGreaterThan(Date.now());
    expect(e2b.sandboxes.has(done.sandbox_id!)).toBe(true);
    // The backoff's wait, cut short: the next look stops it and ends the reap.
    await database.db
      .updateTable("computer_sandbox_reaps")
      .set({ next_attempt_at: new Date() })
      .where("computer_id", "=", computer.id)
      .execute();
    await waitFor("the sandbox to be killed", async () => !e2b.sandboxes.has(done.sandbox_id!));
    await waitFor("the reap to end", async () => (await reapOf(computer.id)) === undefined);

    const byom = (
      await database.db.transaction().execute((trx) =>
        insertComputer(
          trx,
          orgId,
          {
            name: `c${++seq}`,
            remoteUser: "ada",
            provider: "byom",
            hostId: randomUUID(),
            repos: [],
            autoInstallDeps: false,
          },
          planSteps("byom", [], false),
        ),
      )
    ).computer;
    await remove(byom.id);
    expect(await reapOf(byom.id)).toBeUndefined();
  });

  it("puts the computer in error with the failed call's message when E2B refuses to create the sandbox", async () => {
    e2b.failNext("POST /sandboxes", 500, "no capacity in the region");
    const computer = await create([WEB]);
    start();
    expect((await settled(computer.id)).status).toBe("error");
    const steps = await listSteps(database.db, computer.id);
    expect(steps.map((s) => [s.status, s.error])).toEqual([
      ["failed", "E2B POST /sandboxes answered 500: no capacity in the region"],
      ["skipped", null],
      ["skipped", null],
    ]);
  });

  it("fails the clone step with git's own message and skips the rest", async () => {
    e2b.onCommand = (c) =>
      c.envs.REPO_URL === API
        ? {
            exitCode: 128,
            stderr: "Cloning into 'api.partial'...\nfatal: repository 'https://github.com/acme/api.git/' not found\n",
          }
        : { exitCode: 0 };
    const computer = await create([WEB, API]);
    start();
    expect((await settled(computer.id)).status).toBe("error");
    const steps = await listSteps(database.db, computer.id);
    expect(steps.map((s) => s.status)).toEqual(["succeeded", "succeeded", "failed", "skipped", "skipped"]);
    expect(steps[2]!.error).toBe(
      `git clone of ${API} failed with exit code 128: Cloning into 'api.partial'...\nfatal: repository 'https://github.com/acme/api.git/' not found`,
    );
  });

  it("fails the first step with a clear error when E2B is not configured", async () => {
    const computer = await create([WEB]);
    const before = e2b.requests.length;
    start(null);
    expect((await settled(computer.id)).status).toBe("error");
    const steps = await listSteps(database.db, computer.id);
    expect(steps.map((s) => [s.status, s.error])).toEqual([
      ["failed", NOT_CONFIGURED],
      ["skipped", null],
      ["skipped", null],
    ]);
    expect(e2b.requests.length).toBe(before);
  });

  it("resumes after a stop in the middle of a step without repeating finished steps", async () => {
    let held: (() => void) | undefined;
    const arrived = new Promise<void>((resolve) => {
      e2b.onCommand = (c) => {
        if (c.envs.REPO_URL === API && !held) {
          resolve();
          return new Promise((r) => (held = () => r({ exitCode: 0 })));
        }
        return { exitCode: 0 };
      };
    });
    const computer = await create([WEB, API], false);
    const first = start();
    await arrived;
    await first.stop();
    held!();
    const midway = await findComputer(database.db, orgId, computer.id);
    expect(midway).toMatchObject({ status: "provisioning", lease_owner: null });
    expect((await listSteps(database.db, computer.id)).map((s) => s.status)).toEqual([
      "succeeded",
      "succeeded",
      "running",
    ]);

    start();
    const done = await settled(computer.id);
    expect(done.status).toBe("active");
    expect(commandsFor(done.sandbox_id).map(describeCommand)).toEqual([`clone ${WEB}`, `clone ${API}`, `clone ${API}`]);
    expect((await listSteps(database.db, computer.id)).map((s) => s.attempts)).toEqual([1, 1, 2]);
    expect(
      e2b.calls("POST /sandboxes").filter((r) => r.body.metadata.agentplaneComputerId === computer.id),
    ).toHaveLength(1);
  });

  it("finds the sandbox again when it was created but not recorded, instead of creating another", async () => {
    let stopped!: () => void;
    const created = new Promise<void>((resolve) => {
      e2b.afterCreate = async () => {
        e2b.afterCreate = undefined;
        resolve();
        await new Promise<void>((r) => (stopped = r));
      };
    });
    const computer = await create([WEB], false);
    const first = start();
    await created;
    await first.stop();
    stopped();
    expect((await listSteps(database.db, computer.id))[0]).toMatchObject({ status: "running", attempts: 1 });

    start();
    const done = await settled(computer.id);
    expect(done.status).toBe("active");
    const posts = e2b.calls("POST /sandboxes").filter((r) => r.body.metadata.agentplaneComputerId === computer.id);
    expect(posts).toHaveLength(1);
    expect(e2b.calls("GET /v2/sandboxes").some((r) => r.query.get("metadata")?.includes(computer.id))).toBe(true);
    expect(e2b.sandboxes.get(done.sandbox_id!)!.metadata.agentplaneComputerId).toBe(computer.id);
    expect(commandsFor(done.sandbox_id).map(describeCommand)).toEqual([`clone ${WEB}`]);
  });

  it("shares the queue between workers: each computer is provisioned once", async () => {
    const computers = await Promise.all([create([WEB]), create([API]), create([WEB, API], false), create([])]);
    start();
    start();
    start();
    for (const c of computers) expect((await settled(c.id)).status).toBe("active");
    for (const c of computers) {
      expect(e2b.calls("POST /sandboxes").filter((r) => r.body.metadata.agentplaneComputerId === c.id)).toHaveLength(1);
      expect((await listSteps(database.db, c.id)).every((s) => s.attempts === 1)).toBe(true);
    }
  });
});
