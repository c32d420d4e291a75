import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_DEADLINE_MS, loadHookConfig } from "./config.js";

function home(files: Record<string, unknown> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "hook-config-"));
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(join(dir, name), typeof content === "string" ? content : JSON.stringify(content));
  }
  return dir;
}

describe("loadHookConfig", () => {
  it("without a file: desktop on, bell and webhook off, no usage reporting, default paths", () => {
    const h = home();
    expect(loadHookConfig({}, undefined, h)).toEqual({
      source: undefined,
      deadlineMs: DEFAULT_DEADLINE_MS,
      logFile: join(h, ".local/state/agentplane/hooks.log"),
      desktop: true,
      bell: false,
      webhook: undefined,
      usage: undefined,
    });
    expect(loadHookConfig({ XDG_STATE_HOME: "/state" }, undefined, h).logFile).toBe("/state/agentplane/hooks.log");
  });

  it("reads the default file under XDG_CONFIG_HOME, and --config or AGENTPLANE_HOOK_CONFIG instead", () => {
    const h = home({ "a.json": { bell: true, webhook: { url: "https://hooks.example.test/x", secret: "s3" } } });
    const config = loadHookConfig({ AGENTPLANE_HOOK_CONFIG: join(h, "a.json") }, undefined, h);
    expect(config).toMatchObject({
      source: join(h, "a.json"),
      bell: true,
      webhook: { url: "https://hooks.example.test/x", secret: "s3" },
    });
    expect(loadHookConfig({}, join(h, "a.json"), h).bell).toBe(true);
    const xdg = home();
    mkdirSync(join(xdg, "agentplane"));
    writeFileSync(join(xdg, "agentplane", "hooks.json"), JSON.stringify({ desktop: false }));
    expect(loadHookConfig({ XDG_CONFIG_HOME: xdg }, undefined, h)).toMatchObject({
      source: join(xdg, "agentplane", "hooks.json"),
      desktop: false,
    });
  });

  it("lets the environment win over the file", () => {
    const h = home({ "c.json": { deadlineMs: 4000, desktop: true, webhook: { url: "https://a.test/" } } });
    const config = loadHookConfig(
      {
        AGENTPLANE_HOOK_DEADLINE_MS: "900",
        AGENTPLANE_HOOK_DESKTOP: "0",
        AGENTPLANE_HOOK_BELL: "yes",
        AGENTPLANE_HOOK_WEBHOOK_URL: "http://127.0.0.1:9/h",
        AGENTPLANE_HOOK_WEBHOOK_SECRET: "k",
        AGENTPLANE_HOOK_LOG: "/tmp/h.log",
      },
      join(h, "c.json"),
      h,
    );
    expect(config).toMatchObject({
      deadlineMs: 900,
      desktop: false,
      bell: true,
      webhook: { url: "http://127.0.0.1:9/h", secret: "k" },
      logFile: "/tmp/h.log",
    });
  });

  it("turns usage reporting on with a URL and a key, and then needs the organization and user", () => {
    const env = {
      AGENTPLANE_USAGE_URL: "http://127.0.0.1:4000",
      AGENTPLANE_API_KEY: "apk_x",
      AGENTPLANE_ORG_ID: "o1",
      AGENTPLANE_USER_ID: "u1",
    };
    expect(loadHookConfig(env, undefined, home()).usage).toEqual({
      url: "http://127.0.0.1:4000",
      apiKey: "apk_x",
      orgId: "o1",
      userId: "u1",
      client: "terminal-ui",
    });
    expect(() => loadHookConfig({ ...env, AGENTPLANE_USER_ID: "" }, undefined, home())).toThrow(
      /usage.userId \(AGENTPLANE_USER_ID\): must be a non-empty string/,
    );
    expect(() => loadHookConfig({ ...env, AGENTPLANE_CLIENT: "ide" }, undefined, home())).toThrow(
      /usage.client: must be one of/,
    );
    const h = home({
      "u.json": {
        usage: {
          url: "https://gw.test/ingest",
          apiKey: "k",
          orgId: "o",
          userId: "u",
          userEmail: "a@b.test",
          client: "web",
        },
      },
    });
    expect(loadHookConfig({}, join(h, "u.json"), h).usage).toEqual({
      url: "https://gw.test/ingest",
      apiKey: "k",
      orgId: "o",
      userId: "u",
      userEmail: "a@b.test",
      client: "web",
    });
  });

  it("names the file and the field of a bad setting", () => {
    const h = home({
      "bad.json": "{oops",
      "arr.json": [],
      "keys.json": { webhok: {} },
      "url.json": { webhook: { url: "ftp://x" } },
      "dl.json": { deadlineMs: 10 },
      "flag.json": { bell: "loud" },
    });
    const at = (name: string) => () => loadHookConfig({}, join(h, name), h);
    expect(at("bad.json")).toThrow(/bad.json: not valid JSON/);
    expect(at("arr.json")).toThrow(/arr.json: must hold a JSON object/);
    expect(at("keys.json")).toThrow(/keys.json: webhok: unknown setting/);
    expect(at("url.json")).toThrow(/url.json: webhook.url: must use http: or https:/);
    expect(at("dl.json")).toThrow(/deadlineMs: must be an integer number of milliseconds from 100/);
    expect(at("flag.json")).toThrow(/bell: must be true or false/);
    expect(at("missing.json")).toThrow(/missing.json: cannot read \(ENOENT\)/);
    expect(() => loadHookConfig({ AGENTPLANE_HOOK_WEBHOOK_SECRET: "s" }, undefined, h)).toThrow(/no webhook URL/);
  });
});
