import { describe, expect, it } from "vitest";
import { installHooks, isNotifyCommand, SettingsError, uninstallHooks } from "./settings.js";

const HOOK = { type: "command" as const, command: "agentplane hook notify", timeout: 5 };
const EVENTS = ["Notification", "Stop", "SubagentStop", "SessionEnd"];

function roundTrip(original: string | undefined, events = EVENTS) {
  const once = installHooks(original, events, HOOK);
  const twice = installHooks(once.text, events, HOOK);
  const removed = uninstallHooks(twice.text);
  return { once, twice, removed };
}

describe("install → install → uninstall", () => {
  const layouts: Record<string, string> = {
    "two spaces": '{\n  "model": "opus",\n  "permissions": {\n    "allow": ["Bash(ls)"]\n  }\n}\n',
    "four spaces, no final newline": '{\n    "theme": "dark",\n    "n": [1, 2.5e3, -0, true, null]\n}',
    tabs: '{\n\t"theme": "dark",\n\t"nested": {"a": "\\"quoted\\" \\u00e9"}\n}\n',
    CRLF: '{\r\n  "theme": "dark"\r\n}\r\n',
    "one line": '{"theme": "dark", "x": {"y": []}}',
    "empty object": "{}",
    "byte-order mark": '\uFEFF{\n  "theme": "dark"\n}\n',
  };
  for (const [name, original] of Object.entries(layouts)) {
    it(`gives back the same bytes (${name})`, () => {
      const { once, twice, removed } = roundTrip(original);
      expect(once.added).toEqual(EVENTS);
      expect(twice.text).toBe(once.text);
      expect(twice.unchanged).toEqual(EVENTS);
      expect(removed.removed.sort()).toEqual([...EVENTS].sort());
      expect(removed.text).toBe(original);
      // Installed: valid JSON in the spec's shape, everything else intact.
      const installed = JSON.parse(once.text.replace(/^\uFEFF/, ""));
      const before = JSON.parse(original.replace(/^\uFEFF/, ""));
      expect({ ...installed, hooks: undefined }).toEqual({ ...before, hooks: undefined });
      for (const event of EVENTS) expect(installed.hooks[event]).toEqual([{ hooks: [HOOK] }]);
    });
  }

  it("keeps the file's style when it adds hooks", () => {
    const { once } = roundTrip('{\n    "theme": "dark"\n}\n', ["Stop"]);
    expect(once.text).toBe(
      '{\n    "theme": "dark",\n    "hooks": {\n        "Stop": [\n            {\n                "hooks": [\n                    {\n                        "type": "command",\n                        "command": "agentplane hook notify",\n                        "timeout": 5\n                    }\n                ]\n            }\n        ]\n    }\n}\n',
    );
    expect(
      roundTrip('{\r\n  "a": 1\r\n}', ["Stop"])
        .once.text.split("\n")
        .every((line, i, all) => i === all.length - 1 || line.endsWith("\r")),
    ).toBe(true);
  });

  it("adds beside the user's own hooks and removes only its own", () => {
    const original = JSON.stringify(
      {
        hooks: {
          Stop: [{ hooks: [{ type: "command", command: "say done", timeout: 3 }] }],
          PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "./check.sh", timeout: 10 }] }],
        },
        theme: "dark",
      },
      null,
      2,
    );
    const { once, twice, removed } = roundTrip(original, ["Stop", "Notification"]);
    expect(once.added).toEqual(["Stop", "Notification"]);
    expect(twice.text).toBe(once.text);
    const installed = JSON.parse(once.text);
    expect(installed.hooks.Stop).toEqual([
      { hooks: [{ type: "command", command: "say done", timeout: 3 }] },
      { hooks: [HOOK] },
    ]);
    expect(installed.hooks.Notification).toEqual([{ hooks: [HOOK] }]);
    expect(installed.hooks.PreToolUse).toEqual(JSON.parse(original).hooks.PreToolUse);
    expect(removed.text).toBe(original);
  });

  it("updates its hook's timeout or command in place rather than adding a second one", () => {
    const first = installHooks(undefined, ["Stop"], HOOK);
    expect(first.text.endsWith("}\n")).toBe(true);
    const moved = installHooks(first.text, ["Stop"], {
      ...HOOK,
      command: "'/usr/bin/node' '/opt/ap/bin/agentplane.js' hook notify",
      timeout: 8,
    });
    expect(moved.updated).toEqual(["Stop"]);
    expect(JSON.parse(moved.text).hooks.Stop).toEqual([
      { hooks: [{ type: "command", command: "'/usr/bin/node' '/opt/ap/bin/agentplane.js' hook notify", timeout: 8 }] },
    ]);
    expect(uninstallHooks(moved.text).text).toBe("{}\n");
  });

  it("also removes a notify hook written by hand inside another entry, keeping that entry's other hooks", () => {
    const original = {
      hooks: {
        Stop: [
          {
            hooks: [
              { type: "command", command: "say done", timeout: 3 },
              { type: "command", command: "agentplane hook notify --config /x.json", timeout: 5 },
            ],
          },
        ],
      },
    };
    const result = uninstallHooks(JSON.stringify(original, null, 2));
    expect(result.removed).toEqual(["Stop"]);
    expect(JSON.parse(result.text)).toEqual({
      hooks: { Stop: [{ hooks: [{ type: "command", command: "say done", timeout: 3 }] }] },
    });
  });

  it("limits uninstall to the events asked for", () => {
    const installed = installHooks("{}", EVENTS, HOOK).text;
    const result = uninstallHooks(installed, ["Stop"]);
    expect(result.removed).toEqual(["Stop"]);
    expect(Object.keys(JSON.parse(result.text).hooks)).toEqual(["Notification", "SubagentStop", "SessionEnd"]);
  });

  it("refuses files it cannot edit safely, naming the problem", () => {
    expect(() => installHooks("{ not json", EVENTS, HOOK)).toThrow(SettingsError);
    expect(() => installHooks("{ not json", EVENTS, HOOK)).toThrow(/not valid JSON/);
    expect(() => installHooks("[]", EVENTS, HOOK)).toThrow("must hold a JSON object");
    expect(() => installHooks('{"hooks": []}', EVENTS, HOOK)).toThrow("hooks: must be an object");
    expect(() => installHooks('{"hooks": {"Stop": {}}}', EVENTS, HOOK)).toThrow("hooks.Stop: must be an array");
    expect(() => uninstallHooks('{"hooks": 1}')).toThrow("hooks: must be an object");
  });

  it("leaves a file without its hook untouched on uninstall", () => {
    const original = '{ "hooks": { "Stop": [ { "hooks": [ { "type": "command", "command": "notify-me" } ] } ] } }';
    expect(uninstallHooks(original)).toEqual({ text: original, removed: [] });
  });
});

describe("isNotifyCommand", () => {
  it("recognises the notify command however it is invoked, and nothing else", () => {
    expect(isNotifyCommand("agentplane hook notify")).toBe(true);
    expect(isNotifyCommand("agentplane hook notify --config /x")).toBe(true);
    expect(isNotifyCommand("/usr/local/bin/agentplane hook notify")).toBe(true);
    expect(isNotifyCommand("'/usr/bin/node' '/opt/ap/bin/agentplane.js' hook notify")).toBe(true);
    expect(isNotifyCommand("agentplane hook notifyx")).toBe(false);
    expect(isNotifyCommand("my-agentplane hook notify")).toBe(false);
    expect(isNotifyCommand("agentplane hook install")).toBe(false);
    expect(isNotifyCommand("notify-send done")).toBe(false);
  });
});
