import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodedSizeLimit, MESSAGE_HEAP_BYTES } from "./decoded-size.js";
import { countPossibleMessages, tooManyJsonValues } from "./json-objects.js";

const utf8 = (text: string) => new TextEncoder().encode(text);

/** Objects, arrays and array items, and object members, in a parsed JSON value, counted the long way. */
function possibleMessagesIn(value: unknown): { messages: number; members: number } {
  const sum = (values: unknown[], messages: number, members: number) =>
    values
      .map(possibleMessagesIn)
      .reduce((a, b) => ({ messages: a.messages + b.messages, members: a.members + b.members }), {
        messages,
        members,
      });
  if (Array.isArray(value)) return sum(value, 1 + value.length, 0);
  if (value !== null && typeof value === "object") return sum(Object.values(value), 1, Object.keys(value).length);
  return { messages: 0, members: 0 };
}

describe("countPossibleMessages", () => {
  it("counts the objects, arrays and array items JSON.parse makes, brackets in strings and escapes aside", () => {
    // The body and a (2), b's array, its two items and their two objects (5), c's array and its two items (3).
    expect(countPossibleMessages(utf8(`{"a":{"b":[{},{}]},"c":[null, "]{[,\\"{"], "d":"{\\"["}`))).toEqual({
      messages: 10,
      members: 4,
    });
    expect(countPossibleMessages(utf8("[ ]"))).toEqual({ messages: 1, members: 0 });
    expect(countPossibleMessages(utf8("[[[[1]]]]"))).toEqual({ messages: 8, members: 0 });
    fc.assert(
      fc.property(fc.json(), (text) => {
        expect(countPossibleMessages(utf8(text))).toEqual(possibleMessagesIn(JSON.parse(text)));
      }),
      { numRuns: 500 },
    );
    // Deeper than the first stack of levels.
    const deep = `${"[".repeat(1000)}${"]".repeat(1000)}`;
    expect(countPossibleMessages(utf8(deep))).toEqual(possibleMessagesIn(JSON.parse(deep)));
  });
});

describe("tooManyJsonValues", () => {
  it("refuses values that alone pass the decoded-size limit of the body's bytes", () => {
    const dense = utf8(`[${"{},".repeat(200_000)}{}]`);
    // The array, and its items, each an object.
    expect(tooManyJsonValues(dense)).toEqual({ messages: 1 + 2 * 200_001, members: 0 });
    expect((1 + 2 * 200_001) * MESSAGE_HEAP_BYTES).toBeGreaterThan(decodedSizeLimit(dense.length));
    // A Struct's list of nulls: a Value each.
    expect(tooManyJsonValues(utf8(`{"metadata":{"a":[${"null,".repeat(300_000)}null]}}`))).toEqual({
      messages: 3 + 300_001,
      members: 2,
    });
    // A Struct of many short members: a map entry and a Value each.
    const members = Array.from({ length: 300_000 }, (_, i) => `"${i.toString(36)}":0`).join(",");
    expect(tooManyJsonValues(utf8(`{"metadata":{${members}}}`))).toEqual({ messages: 2, members: 300_001 });
  });

  it("takes a body of objects that carry values, and any short body", () => {
    const ordinary = utf8(
      JSON.stringify({
        events: Array.from({ length: 10_000 }, (_, i) => ({ type: "tool_use", time: "2026-11-28T05:00:00Z", id: i })),
      }),
    );
    expect(tooManyJsonValues(ordinary)).toBeUndefined();
    // 6 KiB of empty objects: 4,000 possible messages fit in the limit's constant part.
    expect(tooManyJsonValues(utf8(`[${"{},".repeat(2_000)}{}]`))).toBeUndefined();
  });
});
