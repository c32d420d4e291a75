// `agentplane hook …` as an agent and a user run it: a subprocess with the event JSON on stdin,
// delivering to a webhook receiver on 127.0.0.1 and a stand-in notify-send on PATH.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifySignature } from "../services/cli/hooks/signature.js";

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs the CLI; `stdin` undefined leaves the pipe open (an agent that never closes it). */
function agentplane(args: string[], stdin: string | undefined, env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(process.execPath, ["bin/agentplane.js", ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
    if (stdin !== undefined) child.stdin.end(stdin);
  });
}

interface Delivery {
  headers: IncomingMessage["headers"];
  body: string;
}

const SECRET = "test-secret";
let server: Server;
let webhookUrl: string;
const deliveries: Delivery[] = [];
let home: string;
let fakeBin: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      deliveries.push({ headers: req.headers, body });
      // /hang never answers: the hook must give up at its deadline.
      if (req.url !== "/hang") res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  webhookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  home = mkdtempSync(join(tmpdir(), "hook-home-"));
  fakeBin = mkdtempSync(join(tmpdir(), "hook-bin-"));
  writeFileSync(join(fakeBin, "notify-send"), `#!/bin/sh\nprintf '%s\\n' "$3" >> '${join(fakeBin, "desktop.txt")}'\n`);
  chmodSync(join(fakeBin, "notify-send"), 0o755);
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** A clean environment: a scratch HOME (default config and log paths) and no AGENTPLANE_* from outside. */
function env(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: `${fakeBin}:${process.env.PATH ?? ""}`, HOME: home, AGENTPLANE_HOOK_DESKTOP: "0", ...extra };
}

function logOf(file: string): Array<Record<string, unknown>> {
  try {
    return readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  } catch {
    return [];
  }
}

const forSession = (id: string) =>
  deliveries.filter(
    (d) => (JSON.parse(d.body) as { agentplane: { session_id?: string } }).agentplane.session_id === id,
  );

describe("agentplane hook notify", () => {
  it("turns each event into its message at the webhook, signed, and on the desktop, saying nothing to the agent", async () => {
    const cases = [
      {
        input: { hook_event_name: "Notification", message: "Permission needed for Bash" },
        text: "Agent is waiting for you in web-app: Permission needed for Bash",
      },
      { input: { hook_event_name: "Stop" }, text: "Task finished in web-app" },
      { input: { hook_event_name: "SubagentStop" }, text: "Subagent finished in web-app" },
      { input: { hook_event_name: "SessionEnd", reason: "error" }, text: "Session ended: error in web-app" },
      { input: { hook_event_name: "PostToolUse", tool_name: "Edit" }, text: "Edit finished in web-app" },
    ];
    const e = env({
      AGENTPLANE_HOOK_WEBHOOK_URL: `${webhookUrl}/ok`,
      AGENTPLANE_HOOK_WEBHOOK_SECRET: SECRET,
      AGENTPLANE_HOOK_DESKTOP: "1",
      AGENTPLANE_HOOK_DEADLINE_MS: "8000",
    });
    const runs = await Promise.all(
      cases.map((c, i) =>
        agentplane(
          ["hook", "notify"],
          JSON.stringify({ ...c.input, session_id: `each-${i}`, cwd: "/home/ada/web-app" }),
          e,
        ),
      ),
    );
    for (const [i, c] of cases.entries()) {
      expect(runs[i]).toMatchObject({ code: 0, stdout: "", stderr: "" });
      const got = forSession(`each-${i}`);
      expect(got).toHaveLength(1);
      const { headers, body } = got[0] as Delivery;
      expect(JSON.parse(body)).toMatchObject({
        text: c.text,
        agentplane: { event: c.input.hook_event_name, session_id: `each-${i}`, cwd: "/home/ada/web-app" },
      });
      const timestamp = headers["x-agentplane-timestamp"] as string;
      const signature = headers["x-agentplane-signature"] as string;
      expect(verifySignature(SECRET, { timestamp, signature }, body)).toBe(true);
    }
    const desktop = readFileSync(join(fakeBin, "desktop.txt"), "utf8").trim().split("\n").sort();
    expect(desktop).toEqual(cases.map((c) => c.text).sort());
  }, 60_000);

  it("does not wait past its deadline for a webhook that never answers, and logs it", async () => {
    const log = join(home, "hang.log");
    const run = await agentplane(
      ["hook", "notify"],
      JSON.stringify({ hook_event_name: "Stop", session_id: "hang-1", cwd: "/w/x" }),
      env({
        AGENTPLANE_HOOK_WEBHOOK_URL: `${webhookUrl}/hang`,
        AGENTPLANE_HOOK_DEADLINE_MS: "1500",
        AGENTPLANE_HOOK_LOG: log,
      }),
    );
    expect(run).toMatchObject({ code: 0, stdout: "", stderr: "" });
    // The deadline counts from the process start; allow for process exit and a busy machine.
    expect(run.ms).toBeLessThan(1500 + 1000);
    expect(forSession("hang-1")).toHaveLength(1);
    expect(logOf(log)).toEqual([
      expect.objectContaining({
        level: "warn",
        msg: "webhook failed",
        target: "webhook",
        event: "Stop",
        session_id: "hang-1",
        error: "deadline: no answer in time",
      }),
    ]);
  }, 30_000);

  it("exits 0 at once on malformed JSON, an unknown event or empty input, sending nothing and logging why", async () => {
    const log = join(home, "bad.log");
    const e = env({
      AGENTPLANE_HOOK_WEBHOOK_URL: `${webhookUrl}/ok`,
      AGENTPLANE_HOOK_LOG: log,
      AGENTPLANE_HOOK_DEADLINE_MS: "20000",
    });
    const before = deliveries.length;
    const runs = await Promise.all([
      agentplane(["hook", "notify"], '{"hook_event_name": "Stop", ', e),
      agentplane(["hook", "notify"], '{"hook_event_name": "PreCompact", "session_id": "x"}', e),
      agentplane(["hook", "notify"], "", e),
      agentplane(["hook", "notify", "--unknown-flag", "extra"], "[]", e),
    ]);
    for (const run of runs) {
      expect(run).toMatchObject({ code: 0, stdout: "", stderr: "" });
      // Far below the 20 s deadline: bad input is not waited on.
      expect(run.ms).toBeLessThan(8000);
    }
    expect(deliveries.length).toBe(before);
    const reasons = logOf(log)
      .map((l) => l.reason as string)
      .sort();
    // In sorted order.
    expect(reasons).toEqual([
      "empty input: expected a JSON object on stdin",
      'hook_event_name: unknown event "PreCompact" (known: Notification, Stop, SubagentStop, SessionEnd, PostToolUse)',
      "input must be a JSON object",
      expect.stringMatching(/^malformed JSON: /),
    ]);
  }, 60_000);

  it("gives up on a stdin that is never closed, and on an unusable configuration, still exiting 0", async () => {
    const log = join(home, "stuck.log");
    const stuck = await agentplane(
      ["hook", "notify"],
      undefined,
      env({ AGENTPLANE_HOOK_DEADLINE_MS: "1200", AGENTPLANE_HOOK_LOG: log }),
    );
    expect(stuck).toMatchObject({ code: 0, stdout: "", stderr: "" });
    expect(stuck.ms).toBeLessThan(1200 + 1000);
    expect(logOf(log)).toEqual([expect.objectContaining({ reason: "stdin was not closed before the deadline" })]);

    const badConfig = join(home, "broken-hooks.json");
    writeFileSync(badConfig, '{"webhook": {"url": "ftp://nope"}}');
    const before = deliveries.length;
    const run = await agentplane(["hook", "notify", "--config", badConfig], '{"hook_event_name":"Stop"}', env());
    expect(run).toMatchObject({ code: 0, stdout: "", stderr: "" });
    expect(deliveries.length).toBe(before);
    // Without a usable config the default log file under HOME gets the reason.
    const defaultLog = logOf(join(home, ".local/state/agentplane/hooks.log"));
    expect(defaultLog.at(-1)).toMatchObject({
      level: "error",
      msg: "hook configuration unusable; nothing sent",
      error: expect.stringContaining("webhook.url: must use http: or https:"),
    });
  }, 30_000);
});

describe("agentplane hook install / uninstall", () => {
  it("install → install → uninstall leaves a settings file with unrelated content byte for byte as it was", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hook-settings-"));
    const settings = join(dir, "settings.json");
    const original =
      '{\n    "model": "opus",\n    "permissions": { "allow": ["Bash(npm test)"], "deny": [] },\n    "statusLine": {"type": "command", "command": "~/bin/status"}\n}\n';
    writeFileSync(settings, original, { mode: 0o600 });
    const e = env();
    const first = await agentplane(["hook", "install", "--settings", settings, "--timeout", "7", "--json"], "", e);
    expect(first.code).toBe(0);
    const report = JSON.parse(first.stdout) as { added: string[]; command: string; timeout: number };
    expect(report).toMatchObject({ added: ["Notification", "Stop", "SubagentStop", "SessionEnd"], timeout: 7 });
    expect(report.command).toMatch(/agentplane\.js hook notify$/);
    const installed = readFileSync(settings, "utf8");
    expect(JSON.parse(installed).hooks.Stop).toEqual([
      { hooks: [{ type: "command", command: report.command, timeout: 7 }] },
    ]);
    expect(JSON.parse(installed).permissions).toEqual({ allow: ["Bash(npm test)"], deny: [] });

    const second = await agentplane(["hook", "install", "--settings", settings, "--timeout", "7", "--json"], "", e);
    expect(JSON.parse(second.stdout)).toMatchObject({
      added: [],
      unchanged: ["Notification", "Stop", "SubagentStop", "SessionEnd"],
    });
    expect(readFileSync(settings, "utf8")).toBe(installed);

    const removed = await agentplane(["hook", "uninstall", "--settings", settings], "", e);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain("notify hook removed from");
    expect(readFileSync(settings, "utf8")).toBe(original);
    expect(statSync(settings).mode & 0o777).toBe(0o600);
  }, 60_000);

  it("creates a missing settings file, and refuses to touch one that is not JSON", async () => {
    const dir = mkdtempSync(join(tmpdir(), "hook-settings-"));
    const fresh = join(dir, "new", "settings.json");
    const made = await agentplane(["hook", "install", "--settings", fresh, "--events", "Stop,PostToolUse"], "", env());
    expect(made.code).toBe(0);
    expect(Object.keys(JSON.parse(readFileSync(fresh, "utf8")).hooks)).toEqual(["Stop", "PostToolUse"]);

    const broken = join(dir, "broken.json");
    writeFileSync(broken, "{ // comments are not JSON\n}");
    const refused = await agentplane(["hook", "install", "--settings", broken], "", env());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${broken}: not valid JSON`);
    expect(readFileSync(broken, "utf8")).toBe("{ // comments are not JSON\n}");

    const badEvent = await agentplane(["hook", "install", "--settings", fresh, "--events", "Stop,Nope"], "", env());
    expect(badEvent.code).toBe(2);
    expect(badEvent.stderr).toContain('--events: unknown event "Nope"');
    const badTimeout = await agentplane(["hook", "install", "--settings", fresh, "--timeout", "2"], "", env());
    expect(badTimeout.code).toBe(2);
    expect(badTimeout.stderr).toContain("--timeout 2 is not above the notify deadline of 2500 ms");
  }, 60_000);
});

describe("agentplane hook test", () => {
  it("sends a sample event through the configured targets and reports each", async () => {
    const config = join(home, "test-hooks.json");
    writeFileSync(config, JSON.stringify({ desktop: false, webhook: { url: `${webhookUrl}/ok`, secret: SECRET } }));
    const before = deliveries.length;
    const run = await agentplane(["hook", "test", "Notification", "--config", config], "", {
      PATH: process.env.PATH ?? "",
      HOME: home,
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^webhook: sent \(\d+ ms\)\n$/);
    const sent = deliveries.slice(before);
    expect(sent).toHaveLength(1);
    expect(JSON.parse(sent[0]!.body).text).toMatch(
      /^Agent is waiting for you in .+: This is a test notification from agentplane$/,
    );
    expect(
      verifySignature(
        SECRET,
        {
          timestamp: sent[0]!.headers["x-agentplane-timestamp"] as string,
          signature: sent[0]!.headers["x-agentplane-signature"] as string,
        },
        sent[0]!.body,
      ),
    ).toBe(true);

    // Desktop on (the default) without notify-send on PATH: skipped, not failed.
    const bare = await agentplane(["hook", "test", "Stop", "--json"], "", { PATH: "/nonexistent", HOME: home });
    expect(bare.code).toBe(0);
    expect(JSON.parse(bare.stdout)).toEqual({
      event: "Stop",
      outcomes: [],
      skipped: [{ target: "desktop", reason: expect.stringMatching(/not found|Windows/) }],
    });

    const unknown = await agentplane(["hook", "test", "Nope"], "", env());
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown event "Nope"');
  }, 60_000);
});
