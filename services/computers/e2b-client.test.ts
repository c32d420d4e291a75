// The E2B client against the local server that follows E2B's documented sandbox API.
import { createServer, type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startE2bApiTestServer, type E2bApiTestServer } from "../../test/support/e2b-api-test-server.js";
import { E2bClient } from "./e2b-client.js";
import { E2bError } from "./e2b-envd.js";
import { cloneCommand } from "./step-commands.js";

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("E2B client", () => {
  let e2b: E2bApiTestServer;
  let client: E2bClient;
  const signal = new AbortController().signal;

  beforeAll(async () => {
    e2b = await startE2bApiTestServer();
    client = new E2bClient({ apiUrl: e2b.url, apiKey: e2b.apiKey, sandboxUrl: e2b.url, template: "base" });
  });
  afterAll(() => e2b?.close());

  it("creates a sandbox with the API key, finds it by metadata and reads its access token", async () => {
    const created = await client.createSandbox(
      { templateID: "base", timeout: 3600, autoPause: true, metadata: { agentplaneComputerId: "c-1", team: "a&b=c" } },
      signal,
    );
    expect(created.sandboxId).toMatch(/^i[0-9a-f]{20}$/);
    expect(created.envdAccessToken).toMatch(/^[0-9a-f]{32}$/);
    const [post] = e2b.calls("POST /sandboxes");
    expect(post!.headers["x-api-key"]).toBe(e2b.apiKey);
    expect(post!.body).toEqual({
      templateID: "base",
      timeout: 3600,
      autoPause: true,
      metadata: { agentplaneComputerId: "c-1", team: "a&b=c" },
    });

    expect(await client.findSandboxes({ agentplaneComputerId: "c-1", team: "a&b=c" }, signal)).toEqual([
      created.sandboxId,
    ]);
    expect(await client.findSandboxes({ agentplaneComputerId: "c-2" }, signal)).toEqual([]);
    expect(await client.getSandbox(created.sandboxId, signal)).toEqual(created);
  });

  it("runs a command through envd's process.Process/Start stream as the given user", async () => {
    const sandbox = await client.createSandbox(
      { templateID: "base", timeout: 60, autoPause: false, metadata: {} },
      signal,
    );
    e2b.onCommand = () => ({ exitCode: 0, stdout: "Cloning into 'web.partial'...\n" });
    const result = await client.run(
      sandbox,
      cloneCommand("https://github.com/acme/web.git", "web", "ada"),
      signal,
      5_000,
    );
    expect(result).toEqual({ exitCode: 0, stdout: "Cloning into 'web.partial'...\n", stderr: "", error: undefined });
    const call = e2b.commands.at(-1)!;
    expect(call).toMatchObject({
      sandboxId: sandbox.sandboxId,
      user: "ada",
      cmd: "/bin/bash",
      envs: { REPO_URL: "https://github.com/acme/web.git", REPO_DIR: "web", GIT_TERMINAL_PROMPT: "0" },
    });
    expect(call.args.slice(0, 2)).toEqual(["-l", "-c"]);
  });

  it("reports a failing command's exit code and output, and a failed RPC's error", async () => {
    const sandbox = await client.createSandbox(
      { templateID: "base", timeout: 60, autoPause: false, metadata: {} },
      signal,
    );
    e2b.onCommand = () => ({ exitCode: 128, stderr: "fatal: repository 'https://github.com/acme/gone/' not found\n" });
    const result = await client.run(
      sandbox,
      cloneCommand("https://github.com/acme/gone", "gone", "user"),
      signal,
      5_000,
    );
    expect(result.exitCode).toBe(128);
    expect(result.stderr).toContain("not found");

    e2b.onCommand = () => ({ rpcError: { code: "permission_denied", message: "user does not exist" } });
    await expect(client.run(sandbox, cloneCommand("https://x.org/a", "a", "nobody"), signal, 5_000)).rejects.toThrow(
      "E2B envd process.Process/Start failed: permission_denied: user does not exist",
    );
    // A sandbox envd does not know, or a wrong token, is an HTTP error before any stream.
    await expect(
      client.run({ ...sandbox, envdAccessToken: "wrong" }, cloneCommand("https://x.org/a", "a", "u"), signal, 5_000),
    ).rejects.toThrow(/answered 401: unauthenticated: invalid access token/);
  });

  it("turns API errors into messages naming the call, status and E2B's message", async () => {
    e2b.failNext("POST /sandboxes", 500, "no capacity in the region");
    const err = await client
      .createSandbox({ templateID: "base", timeout: 60, autoPause: false, metadata: {} }, signal)
      .catch((e) => e);
    expect(err).toBeInstanceOf(E2bError);
    expect(err.message).toBe("E2B POST /sandboxes answered 500: no capacity in the region");

    const badKey = new E2bClient({ apiUrl: e2b.url, apiKey: "e2b_wrong", sandboxUrl: e2b.url, template: "base" });
    await expect(badKey.getSandbox("x", signal)).rejects.toThrow("E2B GET /sandboxes/x answered 401: Invalid API key");
    await expect(client.getSandbox("missing", signal)).rejects.toThrow(/answered 404: sandbox "missing" doesn't exist/);

    const unreachable = new E2bClient({
      apiUrl: `http://127.0.0.1:${await closedPort()}`,
      apiKey: "k",
      sandboxUrl: undefined,
      template: "base",
    });
    await expect(
      unreachable.createSandbox({ templateID: "base", timeout: 1, autoPause: false, metadata: {} }, signal),
    ).rejects.toThrow(/^E2B POST \/sandboxes failed: .*ECONNREFUSED/);
  });

  it("gives up on a command that runs past its timeout, and stops when aborted", async () => {
    const sandbox = await client.createSandbox(
      { templateID: "base", timeout: 60, autoPause: false, metadata: {} },
      signal,
    );
    let release!: () => void;
    e2b.onCommand = () => new Promise((resolve) => (release = () => resolve({ exitCode: 0 })));
    await expect(client.run(sandbox, cloneCommand("https://x.org/a", "a", "u"), signal, 200)).rejects.toThrow(
      "the command did not finish within 0.2 s",
    );
    release();
    const stop = new AbortController();
    const running = client.run(sandbox, cloneCommand("https://x.org/a", "a", "u"), stop.signal, 5_000);
    setTimeout(() => stop.abort(), 100);
    const err = await running.catch((e) => e);
    expect(err).not.toBeInstanceOf(E2bError);
    expect(stop.signal.aborted).toBe(true);
    release();
  });
});
