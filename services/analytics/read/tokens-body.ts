// The /tokens data array, from the rows the rollup rendered: as text parts (GetTokens parses them
// into messages; StreamTokens sends them as they are, http-body.ts) or, for a REST client that
// takes deflate or gzip, as the compressed copies the rollup stored (migrations 0010, 0014). Compressed days are kept in a bounded in-memory cache: a past
// day's row never changes unless the day is rolled up again, which changes its digest, part of
// the cache key.
import { sql } from "kysely";
import type { Executor } from "../../database.js";
import { withCrc32, type BodyPart, type ContentCoding, type DeflatedPart } from "../../platform/deflate-parts.js";
import { eachDay, type DayRange } from "../dates.js";
import type { DailyRow } from "../tables.js";
import { zeroTokensRow } from "./rows.js";

/**
 * Columns of analytics_daily that a query's `is not null` condition guarantees (with those the
 * rollup writes together with them).
 */
type Present<K extends keyof DailyRow> = { [P in K]: NonNullable<DailyRow[P]> };

/** A rolled-up day of the range with a /tokens row: its digest, and whether a compressed copy exists. */
export type TokensDayDigest = Pick<DailyRow, "day"> & Present<"tokens_md5"> & { compressed: boolean };

export async function readTokensDigests(db: Executor, orgId: string, range: DayRange): Promise<TokensDayDigest[]> {
  const result = await sql<TokensDayDigest>`
    select day, tokens_md5, tokens_deflate is not null as compressed from analytics_daily
    where org_id = ${orgId} and day between ${range.start}::date and ${range.end}::date and tokens_json is not null
    order by day`.execute(db);
  return result.rows;
}

/** The stored /tokens rows (JSON text) of these days that have one. */
export async function readTexts(db: Executor, orgId: string, days: readonly string[]): Promise<Map<string, string>> {
  if (days.length === 0) return new Map();
  const result = await sql<Pick<DailyRow, "day"> & Present<"tokens_json">>`
    select day, tokens_json from analytics_daily
    where org_id = ${orgId} and day = any(${days}::date[]) and tokens_json is not null`.execute(db);
  return new Map(result.rows.map((r) => [r.day, r.tokens_json]));
}

async function readDeflated(
  db: Executor,
  orgId: string,
  days: readonly string[],
): Promise<Map<string, { md5: string; part: DeflatedPart }>> {
  if (days.length === 0) return new Map();
  type Deflated = Pick<DailyRow, "day" | "tokens_crc32"> &
    Present<"tokens_md5" | "tokens_deflate" | "tokens_adler32" | "tokens_bytes">;
  const result = await sql<Deflated>`
    select day, tokens_md5, tokens_deflate, tokens_adler32, tokens_crc32, tokens_bytes from analytics_daily
    where org_id = ${orgId} and day = any(${days}::date[]) and tokens_deflate is not null`.execute(db);
  return new Map(
    result.rows.map((r) => [
      r.day,
      {
        md5: r.tokens_md5,
        part: {
          deflated: r.tokens_deflate,
          adler32: Number(r.tokens_adler32),
          crc32: r.tokens_crc32 === null ? null : Number(r.tokens_crc32),
          length: r.tokens_bytes,
        },
      },
    ]),
  );
}

/**
 * Stores CRC-32s computed for days compressed before migration 0014, each only while the day's
 * row is the one it was computed from (same digest): a concurrent rollup's new row keeps its own.
 */
async function storeCrcs(
  db: Executor,
  orgId: string,
  crcs: ReadonlyArray<{ day: string; md5: string; crc32: number }>,
): Promise<void> {
  if (crcs.length === 0) return;
  await sql`
    update analytics_daily d set tokens_crc32 = c.crc32
    from unnest(${crcs.map((c) => c.day)}::date[], ${crcs.map((c) => c.md5)}::text[], ${crcs.map((c) => c.crc32)}::bigint[]) as c(day, md5, crc32)
    where d.org_id = ${orgId} and d.day = c.day and d.tokens_md5 = c.md5 and d.tokens_crc32 is null`.execute(db);
}

/** Least recently used compressed day rows, bounded by their total size in bytes. */
export class DeflatedDayCache {
  private readonly entries = new Map<string, DeflatedPart>();
  private bytes = 0;

  constructor(readonly maxBytes: number) {}

  static key(orgId: string, day: string, md5: string): string {
    return `${orgId}/${day}/${md5}`;
  }

  get(key: string): DeflatedPart | undefined {
    const part = this.entries.get(key);
    if (part !== undefined) {
      // Most recently used last: Map iteration follows insertion order.
      this.entries.delete(key);
      this.entries.set(key, part);
    }
    return part;
  }

  /** Adds the row, or replaces the one under the same key (the same bytes, a checksum more). */
  set(key: string, part: DeflatedPart): void {
    const size = part.deflated.length;
    if (size > this.maxBytes) return;
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.entries.delete(key);
      this.bytes -= old.deflated.length;
    }
    this.entries.set(key, part);
    this.bytes += size;
    for (const [oldest, old] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= old.deflated.length;
    }
  }

  get size(): number {
    return this.bytes;
  }
}

/** What a range's answer is made of: each day's digest (the ETag's parts) and whether it will be compressed. */
export interface TokensPlan {
  /** Every day of the range. */
  dates: string[];
  days: readonly TokensDayDigest[];
  /** The ETag parts: each day's digest, or its date when it has no row. */
  digests: string[];
  /**
   * The client's content coding when the body carries compressed parts (the edge then sends it
   * in that coding); null when it goes as text.
   */
  coding: ContentCoding | null;
}

export function planTokens(
  range: DayRange,
  days: readonly TokensDayDigest[],
  coding: ContentCoding | null,
): TokensPlan {
  const byDay = new Map(days.map((d) => [d.day, d]));
  const dates = eachDay(range.start, range.end);
  const digests = dates.map((date) => byDay.get(date)?.tokens_md5 ?? `zero ${date}`);
  return { dates, days, digests, coding: days.some((d) => d.compressed) ? coding : null };
}

/**
 * The JSON array of the plan's rows as parts: stored compressed copies where planned, else text.
 * `writeDb` stores a computed CRC-32 (default db; the primary when db is a read-only replica: the
 * update names the part's digest, so a primary that has moved on takes none).
 */
export async function loadTokensParts(
  db: Executor,
  cache: DeflatedDayCache,
  orgId: string,
  plan: TokensPlan,
  writeDb: Executor = db,
): Promise<BodyPart[]> {
  const compressed = new Map<string, DeflatedPart>();
  const missing: string[] = [];
  // gzip needs each part's CRC-32: a day compressed before migration 0014 gets it computed once,
  // stored beside the part and kept in the cache with it.
  const computed: Array<{ day: string; md5: string; crc32: number }> = [];
  const use = (day: string, md5: string, part: DeflatedPart, cached: boolean) => {
    const ready = plan.coding === "gzip" ? withCrc32(part) : part;
    if (ready !== part) computed.push({ day, md5, crc32: ready.crc32! });
    if (!cached || ready !== part) cache.set(DeflatedDayCache.key(orgId, day, md5), ready);
    compressed.set(day, ready);
  };
  if (plan.coding !== null) {
    for (const d of plan.days) {
      if (!d.compressed) continue;
      const hit = cache.get(DeflatedDayCache.key(orgId, d.day, d.tokens_md5));
      if (hit !== undefined) use(d.day, d.tokens_md5, hit, true);
      else missing.push(d.day);
    }
    for (const [day, { md5, part }] of await readDeflated(db, orgId, missing)) use(day, md5, part, false);
    await storeCrcs(writeDb, orgId, computed);
  }
  // Text for the rest, and for a day whose compressed copy vanished meanwhile (rolled up again).
  const texts = await readTexts(
    db,
    orgId,
    plan.days.filter((d) => !compressed.has(d.day)).map((d) => d.day),
  );
  const parts: BodyPart[] = ["["];
  plan.dates.forEach((date, i) => {
    if (i > 0) parts.push(",");
    const part = compressed.get(date) ?? texts.get(date);
    // A day without a row (or whose row went away meanwhile) prints the zero row.
    parts.push(part ?? zeroTokensRow(date));
  });
  parts.push("]");
  return parts;
}
