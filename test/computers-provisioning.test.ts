// e2b provisioning end to end: computers created through the REST edge are provisioned by the
// computers module's worker against a local server that follows E2B's documented sandbox API;
// a failing E2B call puts the computer in error with that call's message; and a worker process
// killed with SIGKILL in the middle of a step is replaced by another that finishes the job
// without repeating a finished step.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { computersModule } from "../services/computers/module.js";
import type { Worker } from "../services/platform/module.js";
import { startE2bApiTestServer, type CommandCall, type E2bApiTestServer } from "./support/e2b-api-test-server.js";
import { api, createTestOrg, createTestUser, type TestUser } from "./support/fixtures.js";
import { startTestServer, type TestServer } from "./support/server.js";

const WEB = "https://github.com/acme/web.git";
const API = "https://github.com/acme/api.git";
const describeCommand = (c: CommandCall) =>
  `${c.envs.REPO_URL ? "clone" : "install"} ${c.envs.REPO_URL ?? c.envs.REPO_DIR}`;

/** Starts the worker in its own process; resolves once it polls. */
async function spawnWorker(databaseUrl: string, e2b: E2bApiTestServer, leaseMs: number): Promise<ChildProcess> {
  const script = fileURLToPath(new URL("./support/provisioning-worker-process.ts", import.meta.url));
  const child = spawn(
    process.execPath,
    ["--import", "tsx", script, databaseUrl, e2b.url, e2b.apiKey, String(leaseMs)],
    {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const [chunk] = (await Promise.race([
    once(child.stdout!, "data"),
    once(child, "exit").then(() => [Buffer.from("exited")]),
  ])) as Buffer[];
  if (String(chunk).trim() !== "ready") throw new Error(`worker process did not start: ${chunk}`);
  return child;
}

describe("e2b provisioning", () => {
  let server: TestServer;
  let e2b: E2bApiTestServer;
  let member: TestUser;
  const workers: Worker[] = [];
  const children: ChildProcess[] = [];

  const startModuleWorker = async () => {
    const worker = await computersModule.start!(server.platform);
    workers.push(worker);
  };
  const create = async (name: string, repos: string[], autoInstallDeps: boolean) => {
    const res = await api(server.restUrl, member.key, "/api/v0/computers", {
      method: "POST",
      body: { name, remoteUser: "user", provider: "e2b", repos, autoInstallDeps },
    });
    expect(res.status).toBe(201);
    return res.json;
  };
  const get = async (name: string) => (await api(server.restUrl, member.key, `/api/v0/computers/name/${name}`)).json;
  const settled = async (name: string) => {
    for (let i = 0; i < 300; i++) {
      const c = await get(name);
      if (c.status !== "provisioning") return c;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${name} did not finish provisioning`);
  };
  const sandboxOf = (computerId: string) =>
    [...e2b.sandboxes.values()].find((s) => s.metadata.agentplaneComputerId === computerId);

  beforeAll(async () => {
    e2b = await startE2bApiTestServer();
    // Workers are started by each test: the module's own worker, or a separate process.
    server = await startTestServer({ E2B_API_KEY: e2b.apiKey, E2B_API_URL: e2b.url, E2B_SANDBOX_URL: e2b.url });
    member = await createTestUser(server.platform.db, await createTestOrg(server.platform.db, "Sandboxes"), "member");
  });
  afterEach(async () => {
    for (const child of children.splice(0))
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    e2b.onCommand = () => ({ exitCode: 0, stdout: "ok\n" });
  });
  afterAll(async () => {
    await server?.close();
    await e2b?.close();
  });

  it("walks the steps against the E2B API until the computer is active", async () => {
    const created = await create("web-box", [WEB, API], true);
    await startModuleWorker();
    const done = await settled("web-box");
    expect(done.status).toBe("active");
    expect(done.provisioningSteps.map((s: any) => [s.name, s.status])).toEqual([
      ["Create the E2B sandbox", "succeeded"],
      [`Clone ${WEB}`, "succeeded"],
      [`Clone ${API}`, "succeeded"],
      ["Install dependencies of web", "succeeded"],
      ["Install dependencies of api", "succeeded"],
    ]);
    for (const s of done.provisioningSteps) {
      expect(typeof s.startedAt).toBe("number");
      expect(s.completedAt).toBeGreaterThanOrEqual(s.startedAt);
      expect(s).not.toHaveProperty("error");
    }
    const sandbox = sandboxOf(created.id)!;
    expect(sandbox.templateID).toBe("base");
    const commands = e2b.commands.filter((c) => c.sandboxId === sandbox.sandboxID);
    expect(commands.map(describeCommand)).toEqual([`clone ${WEB}`, `clone ${API}`, "install web", "install api"]);
    // Commands run as the computer's remote user.
    expect(new Set(commands.map((c) => c.user))).toEqual(new Set(["user"]));
  });

  it("goes to error with the step's message when E2B fails a call", async () => {
    e2b.failNext("POST /sandboxes", 429, "rate limit exceeded: too many concurrent sandboxes");
    await create("refused-box", [WEB], false);
    await startModuleWorker();
    const done = await settled("refused-box");
    expect(done.status).toBe("error");
    expect(done.provisioningSteps.map((s: any) => [s.status, s.error])).toEqual([
      ["failed", "E2B POST /sandboxes answered 429: rate limit exceeded: too many concurrent sandboxes"],
      ["skipped", undefined],
    ]);

    e2b.onCommand = (c) =>
      c.envs.REPO_DIR === "web" && !c.envs.REPO_URL
        ? { exitCode: 1, stderr: "npm ERR! code ERESOLVE\nnpm ERR! could not resolve dependency tree\n" }
        : { exitCode: 0 };
    await create("broken-deps", [WEB], true);
    const broken = await settled("broken-deps");
    expect(broken.status).toBe("error");
    expect(broken.provisioningSteps.map((s: any) => s.status)).toEqual(["succeeded", "succeeded", "failed"]);
    expect(broken.provisioningSteps[2].error).toBe(
      "dependency install in web failed with exit code 1: npm ERR! code ERESOLVE\nnpm ERR! could not resolve dependency tree",
    );
  });

  it("finishes after the worker process is killed mid-step, without repeating a finished step", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let arrived!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    let interrupted = false;
    e2b.onCommand = async (c) => {
      if (c.envs.REPO_URL === API && !interrupted) {
        interrupted = true;
        arrived();
        await held;
      }
      return { exitCode: 0 };
    };
    const created = await create("killed-box", [WEB, API], true);

    const child = await spawnWorker(server.database.url, e2b, 1_000);
    children.push(child);
    await reached;
    const midway = await get("killed-box");
    expect(midway.status).toBe("provisioning");
    expect(midway.provisioningSteps.map((s: any) => s.status)).toEqual([
      "succeeded",
      "succeeded",
      "running",
      "pending",
      "pending",
    ]);

    child.kill("SIGKILL");
    await once(child, "exit");
    release();

    // The replacement claims the computer once the dead worker's lease lapses.
    await startModuleWorker();
    const done = await settled("killed-box");
    expect(done.status).toBe("active");
    expect(done.provisioningSteps.every((s: any) => s.status === "succeeded")).toBe(true);

    const sandbox = sandboxOf(created.id)!;
    expect(
      e2b.calls("POST /sandboxes").filter((r) => r.body.metadata.agentplaneComputerId === created.id),
    ).toHaveLength(1);
    // The interrupted clone ran again; every step that had finished ran exactly once.
    expect(e2b.commands.filter((c) => c.sandboxId === sandbox.sandboxID).map(describeCommand)).toEqual([
      `clone ${WEB}`,
      `clone ${API}`,
      `clone ${API}`,
      "install web",
      "install api",
    ]);
  });
});
