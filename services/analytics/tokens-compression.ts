// The rollup's last step for /tokens: each recomputed day's rendered row, printed compactly and
// compressed once
// (migration 0010), so requests that take deflate send stored bytes (platform/deflate-parts.ts).
import { sql } from "kysely";
import type { Executor } from "../database.js";
import { deflatePart } from "../platform/deflate-parts.js";

/** Compresses the rendered /tokens rows of these days that are not compressed yet. */
export async function compressTokensRows(db: Executor, orgId: string, days: readonly string[]): Promise<void> {
  // One day at a time: a large organization's day is megabytes of text.
  for (const day of days) {
    const { rows } = await sql<{ tokens_json: string }>`
      select tokens_json from analytics_daily
      where org_id = ${orgId} and day = ${day}::date and tokens_json is not null and tokens_deflate is null`.execute(db);
    const rendered = rows[0]?.tokens_json;
    if (rendered === undefined) continue;
    // Printed again as the edge prints JSON: Postgres' json_build_object/json_agg write " : " and
    // ", " and numerics keep trailing zeros; the same values, a tenth fewer bytes.
    const text = JSON.stringify(JSON.parse(rendered));
    const part = deflatePart(text);
    await sql`
      update analytics_daily set tokens_json = ${text}, tokens_md5 = md5(${text}::text),
        tokens_deflate = ${part.deflated}, tokens_adler32 = ${part.adler32}, tokens_crc32 = ${part.crc32}, tokens_bytes = ${part.length}
      where org_id = ${orgId} and day = ${day}::date`.execute(db);
  }
}
