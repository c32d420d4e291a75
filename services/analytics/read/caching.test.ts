// HTTP caching of analytics responses (no database).
import { describe, expect, it } from "vitest";
import { matchesIfNoneMatch } from "../../platform/entity-tags.js";
import { etagOf } from "./caching.js";

describe("If-None-Match", () => {
  it("matches the current tag, weak or strong, in a list, or *", () => {
    const tag = etagOf({ a: 1 });
    expect(tag).toBe(etagOf({ a: 1 }));
    expect(tag).not.toBe(etagOf({ a: 2 }));
    expect(matchesIfNoneMatch(tag, tag)).toBe(true);
    expect(matchesIfNoneMatch(`"x", W/${tag}`, tag)).toBe(true);
    expect(matchesIfNoneMatch("*", tag)).toBe(true);
    expect(matchesIfNoneMatch('"x"', tag)).toBe(false);
    expect(matchesIfNoneMatch(null, tag)).toBe(false);
  });
});
