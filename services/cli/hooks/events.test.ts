import { describe, expect, it } from "vitest";
import { describeEvent, parseHookInput, sampleEvent, HOOK_EVENTS } from "./events.js";

describe("parseHookInput", () => {
  it("reads the fields the spec names and ignores the rest", () => {
    const parsed = parseHookInput(
      JSON.stringify({
        hook_event_name: "SessionEnd",
        session_id: "s1",
        cwd: "/home/a/api",
        reason: "error",
        transcript_path: "/x",
      }),
    );
    expect(parsed).toEqual({
      ok: true,
      input: { event: "SessionEnd", sessionId: "s1", cwd: "/home/a/api", reason: "error" },
    });
  });

  it("rejects empty input, malformed JSON, non-objects and unknown or missing event names", () => {
    expect(parseHookInput("")).toMatchObject({ ok: false, reason: expect.stringContaining("empty input") });
    expect(parseHookInput("  \n")).toMatchObject({ ok: false, reason: expect.stringContaining("empty input") });
    expect(parseHookInput("{nope")).toMatchObject({ ok: false, reason: expect.stringContaining("malformed JSON") });
    expect(parseHookInput("[1]")).toMatchObject({ ok: false, reason: "input must be a JSON object" });
    expect(parseHookInput("{}")).toMatchObject({ ok: false, reason: "hook_event_name: missing" });
    expect(parseHookInput('{"hook_event_name": 3}')).toMatchObject({ ok: false, reason: "hook_event_name: missing" });
    expect(parseHookInput('{"hook_event_name": "PreCompact"}')).toMatchObject({
      ok: false,
      reason: expect.stringContaining('unknown event "PreCompact"'),
    });
  });

  it("drops optional fields of the wrong type instead of failing", () => {
    expect(parseHookInput('{"hook_event_name": "Stop", "cwd": 5, "session_id": ""}')).toEqual({
      ok: true,
      input: { event: "Stop" },
    });
  });
});

describe("describeEvent", () => {
  it("gives one short line per event, naming the project directory", () => {
    const cwd = "/home/ada/projects/api/";
    expect(describeEvent({ event: "Notification", cwd })).toBe("Agent is waiting for you in api");
    expect(describeEvent({ event: "Notification", cwd, message: "Claude needs your permission to use Bash" })).toBe(
      "Agent is waiting for you in api: Claude needs your permission to use Bash",
    );
    expect(describeEvent({ event: "Stop", cwd })).toBe("Task finished in api");
    expect(describeEvent({ event: "SubagentStop", cwd })).toBe("Subagent finished in api");
    expect(describeEvent({ event: "SessionEnd", cwd, reason: "error" })).toBe("Session ended: error in api");
    expect(describeEvent({ event: "SessionEnd" })).toBe("Session ended");
    expect(describeEvent({ event: "PostToolUse", cwd, toolName: "Edit" })).toBe("Edit finished in api");
    expect(describeEvent({ event: "PostToolUse" })).toBe("A tool finished");
  });

  it("strips control characters and cuts long messages", () => {
    const text = describeEvent({ event: "Notification", message: `\u001b[31mred\u0007\nline two${"x".repeat(500)}` });
    expect(text).not.toMatch(/[\u0000-\u001f]/);
    expect(text.startsWith("Agent is waiting for you: [31mred line two")).toBe(true);
    expect(text.length).toBeLessThanOrEqual("Agent is waiting for you: ".length + 200);
    expect(text.endsWith("…")).toBe(true);
  });

  it("has a sample for every event", () => {
    for (const event of HOOK_EVENTS) expect(describeEvent(sampleEvent(event, "/tmp/demo", "s"))).toContain("demo");
  });
});
