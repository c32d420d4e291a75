// sessionSettings validation and PATCH merge semantics, as plain functions.
import { create, fromJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { invalidArgumentMessage as message } from "../../test/support/domain-errors.js";
import { SessionSettingsUpdateSchema } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { mergeSettings, parseSettingsUpdate, parseTokenUsage } from "./settings.js";

const update = (json: unknown) => fromJson(SessionSettingsUpdateSchema, json as never);

describe("parseSettingsUpdate", () => {
  it("keeps exactly the fields present, with their values", () => {
    expect(parseSettingsUpdate(update({}))).toEqual({});
    expect(parseSettingsUpdate(undefined)).toEqual({});
    const parsed = parseSettingsUpdate(
      update({
        model: "gpt-5",
        specModeModel: "",
        assistantActiveTimeMs: 1500,
        archivedAt: "2026-03-01T00:00:00Z",
        tags: [{ name: "infra", metadata: { team: "a", n: 1 } }, { name: "plain" }],
        enabledToolIds: ["Read", "Edit"],
        disabledToolIds: [],
        childInclusiveTokenUsageBySessionId: { "client-child": { inputTokens: 10, factoryCredits: 1.5 } },
      }),
    );
    expect(parsed).toEqual({
      model: "gpt-5",
      specModeModel: "",
      assistantActiveTimeMs: 1500,
      archivedAt: "2026-03-01T00:00:00Z",
      tags: [{ name: "infra", metadata: { team: "a", n: 1 } }, { name: "plain" }],
      enabledToolIds: ["Read", "Edit"],
      disabledToolIds: [],
      childInclusiveTokenUsageBySessionId: {
        "client-child": {
          inputTokens: 10,
          outputTokens: 0,
          cacheCreationTokens: 0,
          cacheReadTokens: 0,
          thinkingTokens: 0,
          factoryCredits: 1.5,
        },
      },
    });
    expect(parsed).not.toHaveProperty("providerLockTimestamp");
  });

  it("names the JSON path of a bad list or map item", () => {
    expect(message(() => parseSettingsUpdate(update({ tags: [{ name: "ok" }, 5] })))).toBe(
      "sessionSettings.tags[1]: must be an object {name, metadata}, got a number",
    );
    expect(message(() => parseSettingsUpdate(update({ tags: [{ name: 3 }] })))).toBe(
      "sessionSettings.tags[0].name: must be a string, got a number",
    );
    expect(message(() => parseSettingsUpdate(update({ tags: [{ name: "x", color: "red" }] })))).toMatch(
      /^sessionSettings\.tags\[0\]\.color: is not a tag field/,
    );
    expect(message(() => parseSettingsUpdate(update({ tags: [{ name: "x", metadata: [] }] })))).toBe(
      "sessionSettings.tags[0].metadata: must be an object, got an array",
    );
    expect(message(() => parseSettingsUpdate(update({ enabledToolIds: ["a", 1] })))).toBe(
      "sessionSettings.enabledToolIds[1]: must be a string, got a number",
    );
    expect(message(() => parseSettingsUpdate(update({ disabledToolIds: [""] })))).toBe(
      "sessionSettings.disabledToolIds[0]: must not be empty",
    );
    expect(message(() => parseSettingsUpdate(update({ childInclusiveTokenUsageBySessionId: { c: 5 } })))).toMatch(
      /^sessionSettings\.childInclusiveTokenUsageBySessionId\.c: must be an object/,
    );
    expect(
      message(() => parseSettingsUpdate(update({ childInclusiveTokenUsageBySessionId: { c: { tokens: 1 } } }))),
    ).toMatch(/^sessionSettings\.childInclusiveTokenUsageBySessionId\.c\.tokens: is not a token usage field/);
    expect(
      message(() => parseSettingsUpdate(update({ childInclusiveTokenUsageBySessionId: { c: { inputTokens: -1 } } }))),
    ).toBe("sessionSettings.childInclusiveTokenUsageBySessionId.c.inputTokens: must be 0 or more, got -1");
    expect(message(() => parseSettingsUpdate(update({ assistantActiveTimeMs: -5 })))).toMatch(
      /^sessionSettings\.assistantActiveTimeMs: /,
    );
    expect(message(() => parseSettingsUpdate(update({ model: "m".repeat(300) })))).toBe(
      "sessionSettings.model: must be at most 256 characters, got 300",
    );
  });

  it("limits how deeply a tag's metadata nests objects and arrays: 32 levels, the metadata object being the first", () => {
    const deep = (levels: number, wrap: (v: unknown) => unknown) => {
      let v: unknown = 1;
      for (let i = 1; i < levels; i++) v = wrap(v);
      return { k: v };
    };
    const objects = (v: unknown) => ({ a: v });
    const lists = (v: unknown) => [v];
    const mixed = (v: unknown) => (Array.isArray(v) ? { a: v } : [v]);
    for (const wrap of [objects, lists, mixed]) {
      // deep(n) is n levels: the metadata object and n - 1 levels inside it.
      expect(
        parseSettingsUpdate(update({ tags: [{ name: "x", metadata: deep(32, wrap) }] })).tags?.[0]?.metadata,
      ).toEqual(deep(32, wrap));
      expect(
        message(() => parseSettingsUpdate(update({ tags: [{ name: "ok" }, { name: "x", metadata: deep(33, wrap) }] }))),
      ).toBe(
        "sessionSettings.tags[1].metadata: must nest objects and arrays at most 32 levels deep (the metadata object is level 1); deeper values cannot be read by protobuf clients",
      );
    }
    // Wide is not deep.
    expect(
      parseSettingsUpdate(
        update({
          tags: [
            { name: "x", metadata: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, { v: [i] }])) },
          ],
        }),
      ).tags,
    ).toHaveLength(1);
  });

  it("limits list sizes", () => {
    const tags = Array.from({ length: 101 }, (_, i) => ({ name: `t${i}` }));
    expect(message(() => parseSettingsUpdate(update({ tags })))).toBe(
      "sessionSettings.tags: must have at most 100 items, got 101",
    );
  });

  it("uses the path it is given (CreateSession's settings)", () => {
    expect(message(() => parseSettingsUpdate(update({ tags: [1] }), "settings"))).toMatch(/^settings\.tags\[0\]:/);
  });
});

describe("mergeSettings", () => {
  it("replaces present fields and keeps absent ones; an empty list clears", () => {
    const stored = { model: "a", tags: [{ name: "x" }], enabledToolIds: ["Read"] };
    expect(mergeSettings(stored, { model: "b", enabledToolIds: [] })).toEqual({
      model: "b",
      tags: [{ name: "x" }],
      enabledToolIds: [],
    });
    expect(mergeSettings(stored, {})).toEqual(stored);
  });
});

describe("parseTokenUsage", () => {
  it("fills missing counters with 0 and rejects non-numbers", () => {
    expect(parseTokenUsage("u", { outputTokens: 2 })).toMatchObject({ inputTokens: 0, outputTokens: 2 });
    expect(message(() => parseTokenUsage("u", { outputTokens: "2" }))).toBe(
      "u.outputTokens: must be a number, got a string",
    );
    expect(create(SessionSettingsUpdateSchema).tags).toBeUndefined();
  });
});
