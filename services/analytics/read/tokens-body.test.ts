import { sql } from "kysely";
import { gunzipSync, inflateSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/support/database.js";
import type { Database } from "../../database.js";
import { migrations } from "../../migrations.js";
import { createOrganization, createUser } from "../../organization/queries.js";
import {
  bodyText,
  crc32,
  deflatePart,
  gzipStream,
  isDeflated,
  zlibStream,
  type DeflatedPart,
} from "../../platform/deflate-parts.js";
import { ingestEvents } from "../ingest/ingest.js";
import { rollupOrganization } from "../rollup/rollup.js";
import { DeflatedDayCache, loadTokensParts, planTokens, readTokensDigests } from "./tokens-body.js";

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

  it("replaces a row under the same key, counting its size once", () => {
    const cache = new DeflatedDayCache(100);
    cache.set("a", part(40));
    cache.set("a", { ...part(30), crc32: 7 });
    expect(cache.size).toBe(30);
    expect(cache.get("a")?.crc32).toBe(7);
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
    expect(planTokens(range, days, "deflate").coding).toBe("deflate");
    expect(planTokens(range, days, "gzip").coding).toBe("gzip");
    expect(planTokens(range, days, null).coding).toBeNull();
    expect(planTokens(range, [{ ...days[0]!, compressed: false }], "gzip").coding).toBeNull();
  });
});

describe("loadTokensParts", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  const range = { start: "2026-03-01", end: "2026-03-03" };

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    orgId = (await createOrganization(database.db, { name: "Tokens" })).id;
    const userId = (await createUser(database.db, { orgId, email: "t@example.test", role: "owner" })).id;
    const usage = (time: string, model: string) => ({
      type: "model_usage",
      time,
      orgId,
      userId,
      client: "web",
      modelId: model,
      modelTier: "standard",
      inputTokens: 1000,
      outputTokens: 10,
      cacheReadTokens: 5,
      cacheWriteTokens: 1,
    });
    await ingestEvents(
      database.db,
      [usage("2026-03-01T10:00:00Z", "m-a"), usage("2026-03-03T10:00:00Z", "m-b")],
      Date.parse("2026-03-10T00:00:00Z"),
    );
    await rollupOrganization(database.db, orgId, ["2026-03-01", "2026-03-02", "2026-03-03"], { through: "2026-03-09" });
  }, 60_000);

  afterAll(async () => {
    await database?.drop();
  });

  const load = async (coding: "deflate" | "gzip" | null, cache = new DeflatedDayCache(1 << 20)) => {
    const plan = planTokens(range, await readTokensDigests(database.db, orgId, range), coding);
    return { plan, cache, parts: await loadTokensParts(database.db, cache, orgId, plan) };
  };

  it("assembles the stored compressed rows into either coding, the same text as the plain rows", async () => {
    const text = bodyText((await load(null)).parts);
    expect(JSON.parse(text).map((r: { date: string }) => r.date)).toEqual(["2026-03-01", "2026-03-02", "2026-03-03"]);
    const { parts } = await load("gzip");
    expect(parts.filter(isDeflated).length).toBeGreaterThan(0);
    expect(gunzipSync(Buffer.concat(gzipStream(parts))).toString()).toBe(text);
    expect(inflateSync(Buffer.concat(zlibStream((await load("deflate")).parts))).toString()).toBe(text);
  });

  it("gives a day stored without its CRC-32 (before migration 0014) one, computed once, stored and cached", async () => {
    const text = bodyText((await load(null)).parts);
    await sql`update analytics_daily set tokens_crc32 = null where org_id = ${orgId}`.execute(database.db);
    // deflate needs no CRC: the parts come as stored.
    const deflate = await load("deflate");
    expect(deflate.parts.filter(isDeflated).every((p) => p.crc32 === null)).toBe(true);
    // gzip: each compressed part has the CRC of its text, and the cache keeps it with the part.
    const gzip = await load("gzip", deflate.cache);
    const compressed = gzip.parts.filter(isDeflated);
    expect(compressed.length).toBeGreaterThan(0);
    for (const p of compressed) expect(p.crc32).toBe(crc32(bodyText([p])));
    for (const d of gzip.plan.days.filter((d) => d.compressed)) {
      expect(gzip.cache.get(DeflatedDayCache.key(orgId, d.day, d.tokens_md5))?.crc32).not.toBeNull();
    }
    expect(gunzipSync(Buffer.concat(gzipStream(gzip.parts))).toString()).toBe(text);
    // Stored beside the part: the next process reads it instead of computing it.
    const stored = await sql<{ day: string; tokens_crc32: string | null }>`
      select day, tokens_crc32 from analytics_daily where org_id = ${orgId} and tokens_deflate is not null order by day`.execute(
      database.db,
    );
    expect(stored.rows.length).toBe(compressed.length);
    expect(stored.rows.map((r) => Number(r.tokens_crc32))).toEqual(compressed.map((p) => p.crc32));
    expect((await load("gzip")).parts.filter(isDeflated).map((p: DeflatedPart) => p.crc32)).toEqual(
      compressed.map((p) => p.crc32),
    );
    const again = await load("gzip", gzip.cache);
    expect(again.parts.filter(isDeflated).map((p: DeflatedPart) => p.crc32)).toEqual(compressed.map((p) => p.crc32));
  });
});
