import { describe, expect, it } from "vitest";
import { deflatePart } from "../platform/deflate-parts.js";
import { DeflatedDayCache, planTokens } from "./tokens-body.js";

describe("DeflatedDayCache", () => {
  const part = (n: number) => ({ deflated: Buffer.alloc(n), adler32: 1, crc32: 0, length: n });

  it("evicts the least recently used rows beyond its size", () => {
    const cache = new DeflatedDayCache(100);
    cache.set("a", part(40));
    cache.set("b", part(40));
    expect(cache.get("a")).toBeDefined(); // a is now the most recent
    cache.set("c", part(40));
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("a")).toBeDefined();
    expect(cache.get("c")).toBeDefined();
    expect(cache.size).toBe(80);
  });

  it("never holds a row larger than its bound", () => {
    const cache = new DeflatedDayCache(10);
    cache.set("big", part(11));
    expect(cache.get("big")).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("keys rows by organization, day and digest", () => {
    const cache = new DeflatedDayCache(1 << 20);
    cache.set(DeflatedDayCache.key("org-a", "2026-03-01", "m1"), deflatePart("[1]"));
    expect(cache.get(DeflatedDayCache.key("org-b", "2026-03-01", "m1"))).toBeUndefined();
    expect(cache.get(DeflatedDayCache.key("org-a", "2026-03-01", "m2"))).toBeUndefined();
    expect(cache.get(DeflatedDayCache.key("org-a", "2026-03-01", "m1"))).toBeDefined();
  });
});

describe("planTokens", () => {
  const range = { start: "2026-03-01", end: "2026-03-03" };
  const days = [{ day: "2026-03-02", tokens_md5: "m2", compressed: true }];

  it("names every day of the range in the ETag parts, a day without a row by its date", () => {
    expect(planTokens(range, days, null).digests).toEqual(["zero 2026-03-01", "m2", "zero 2026-03-03"]);
  });

  it("compresses only for a client that takes deflate or gzip, and only when a compressed copy exists", () => {
    expect(planTokens(range, days, "deflate").compressed).toBe(true);
    expect(planTokens(range, days, "gzip").compressed).toBe(true);
    expect(planTokens(range, days, null).compressed).toBe(false);
    expect(planTokens(range, [{ ...days[0]!, compressed: false }], "gzip").compressed).toBe(false);
  });
});
