// Frozen: never edit a migration once it has been merged; add a new one.
//
// The CRC-32 of each day's /tokens text beside its Adler-32 (migration 0010), so the REST edge
// can send the stored deflate blocks as gzip too (platform/deflate-parts.ts): many clients take
// gzip alone (Go's net/http, OkHttp), and a zlib stream's Adler-32 cannot stand in for gzip's
// CRC. Null on days compressed before this migration; the edge then computes the CRC from the
// inflated text until the day is rolled up again.
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table analytics_daily add column tokens_crc32 bigint`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table analytics_daily drop column tokens_crc32`.execute(db);
}
