// Binary COPY: the writer's bytes must read back on a real server as exactly the values written
// (strings of any kind, integers up to 2^53, timestamps to the millisecond, NULLs, and values
// repeated from the row before, which the writer copies instead of encoding again).
import { sql, type Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/support/database.js";
import type { Database } from "../../database.js";
import { migrations } from "../../migrations.js";
import { BinaryCopyWriter, copyInto, supportsCopy } from "./pg-copy.js";

describe("BinaryCopyWriter", () => {
  it("frames rows as Postgres's binary COPY format", () => {
    const w = new BinaryCopyWriter(8); // grows as needed
    w.row(3);
    w.text("ab");
    w.int8(-2);
    w.nullField();
    const bytes = w.finish();
    expect(bytes.subarray(0, 11).toString("latin1")).toBe("PGCOPY\n\xff\r\n\0");
    expect(bytes.readInt32BE(11)).toBe(0); // flags
    expect(bytes.readInt32BE(15)).toBe(0); // header extension
    let p = 19;
    expect(bytes.readInt16BE(p)).toBe(3);
    expect(bytes.readInt32BE((p += 2))).toBe(2);
    expect(bytes.subarray((p += 4), p + 2).toString()).toBe("ab");
    expect(bytes.readInt32BE((p += 2))).toBe(8);
    expect(bytes.readBigInt64BE((p += 4))).toBe(-2n);
    expect(bytes.readInt32BE((p += 8))).toBe(-1);
    expect(bytes.readInt16BE((p += 4))).toBe(-1); // trailer
    expect(bytes.length).toBe(p + 2);
  });

  it("encodes integers and timestamps exactly up to 2^53", () => {
    const w = new BinaryCopyWriter();
    w.row(4);
    w.int8(2 ** 53 - 1);
    w.int8(-(2 ** 53) + 1);
    w.timestamptz(Date.parse("2026-03-01T12:34:56.789Z"));
    w.timestamptz(Date.parse("1999-12-31T23:59:59.999Z")); // before Postgres's epoch
    const bytes = w.finish();
    const at = (i: number) => bytes.readBigInt64BE(19 + 2 + 4 + i * 12);
    expect(at(0)).toBe(2n ** 53n - 1n);
    expect(at(1)).toBe(-(2n ** 53n) + 1n);
    expect(at(2)).toBe(BigInt(Date.parse("2026-03-01T12:34:56.789Z") - 946_684_800_000) * 1000n);
    expect(at(3)).toBe(-1000n);
  });
});

const onPostgres = Boolean(process.env.TEST_DATABASE_URL);

describe.runIf(onPostgres)("copyInto on Postgres", () => {
  let database: TestDatabase<Database>;
  let db: Kysely<Database>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    db = database.db;
  }, 60_000);

  afterAll(async () => {
    await database?.drop();
  });

  it("knows the server takes COPY", async () => {
    expect(await supportsCopy(db)).toBe(true);
  });

  it("reads back every value as written, repeated values and multi-byte text included", async () => {
    const strings = [
      "",
      "plain",
      "NULL",
      "tab\tnew\nline\\",
      'quote"comma,{brace}',
      "ünïcødé ✓",
      "emoji 🚀 pair",
      "x".repeat(5000),
      "日本語のパス/ファイル.ts",
    ];
    const rows: Array<{ s: string | null; t: string | null; n: number | null; at: number }> = [];
    for (let i = 0; i < 60; i++) {
      rows.push({
        // Runs of equal values (copied by the writer), then a change.
        s: strings[Math.floor(i / 3) % strings.length]!,
        t: i % 5 === 0 ? null : strings[i % strings.length]!,
        n: i % 7 === 0 ? null : i % 2 === 0 ? 1e15 - i : i,
        at: Date.parse("2026-03-01T00:00:00Z") + i * 1_234_567,
      });
    }
    const w = new BinaryCopyWriter(64);
    for (const r of rows) {
      w.row(5);
      w.text(r.s);
      w.text(r.t);
      w.int8(r.n);
      w.timestamptz(r.at);
      w.text(r.s); // the same value in another field: its own memory, its own bytes
    }
    const back = await db.transaction().execute(async (trx) => {
      await sql`create temporary table copy_check (s text, t text, n bigint, at timestamptz(3), s2 text) on commit drop`.execute(
        trx,
      );
      const count = await copyInto(trx, "copy copy_check from stdin (format binary)", w.finish());
      expect(count).toBe(rows.length);
      return (
        await sql<{
          s: string;
          t: string | null;
          n: number | null;
          at: Date;
          s2: string;
        }>`select * from copy_check`.execute(trx)
      ).rows;
    });
    expect(back.map((r) => ({ s: r.s, t: r.t, n: r.n, at: r.at.getTime() }))).toEqual(rows);
    expect(back.map((r) => r.s2)).toEqual(rows.map((r) => r.s));
  });

  it("rejects with the server's error, and the transaction can roll back to a savepoint", async () => {
    await db.transaction().execute(async (trx) => {
      await sql`create temporary table copy_unique (k text primary key) on commit drop`.execute(trx);
      await sql`insert into copy_unique values ('taken')`.execute(trx);
      await sql`savepoint s`.execute(trx);
      const w = new BinaryCopyWriter();
      for (const k of ["free", "taken"]) {
        w.row(1);
        w.text(k);
      }
      await expect(copyInto(trx, "copy copy_unique from stdin (format binary)", w.finish())).rejects.toMatchObject({
        code: "23505",
      });
      await sql`rollback to savepoint s`.execute(trx);
      const keys = await sql<{ k: string }>`select k from copy_unique order by k`.execute(trx);
      expect(keys.rows.map((r) => r.k)).toEqual(["taken"]);
    });
  });
});
