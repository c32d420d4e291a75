import { execFile } from "node:child_process";
import { promises as fsp } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { sql, type Migration } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, testLogger, type TestDatabase } from "../../test/support/database.js";
import { openDatabase } from "./db.js";
import { EMBEDDED_INFO_FILE, connectEmbeddedOrOpen, readEmbeddedInfo } from "./pglite.js";

const run = promisify(execFile);
const logger = testLogger();
const mode = process.env.TEST_DATABASE_URL ? "postgres" : "pglite";

const numbersMigration: Migration = {
  async up(db) {
    await sql`create table numbers (
      id int8 primary key,
      counter int8 not null,
      amount numeric not null,
      day date not null,
      at timestamptz(3) not null,
      ids int8[] not null
    )`.execute(db);
  },
};

describe(`openDatabase (${mode})`, () => {
  let database: TestDatabase<any>;
  beforeAll(async () => {
    database = await createTestDatabase({ "0001_numbers": numbersMigration });
  });
  afterAll(async () => {
    await database?.drop();
  });

  it("reports its kind and answers ping", async () => {
    expect(database.kind).toBe(mode);
    expect(await database.ping()).toBe(true);
  });

  it("returns int8 and numeric as numbers, timestamptz as Date, date as YYYY-MM-DD", async () => {
    const at = new Date("2024-03-05T06:07:08.123Z");
    const big = 2 ** 53 - 1;
    await database.db
      .insertInto("numbers")
      .values({ id: 1, counter: big, amount: "12.5", day: "2024-03-05", at, ids: sql`array[1, ${big}]::int8[]` })
      .execute();
    const row = await database.db.selectFrom("numbers").selectAll().executeTakeFirstOrThrow();
    expect(row).toEqual({ id: 1, counter: big, amount: 12.5, day: "2024-03-05", at, ids: [1, big] });
    expect(row.at).toBeInstanceOf(Date);
    const agg = await sql<{ n: unknown; s: unknown }>`select count(*) as n, sum(counter) as s from numbers`.execute(
      database.db,
    );
    expect(agg.rows[0]).toEqual({ n: 1, s: big });
  });

  it("leaves pg's global type parsers alone", () => {
    expect(pg.types.getTypeParser(20, "text")("5")).toBe("5");
  });

  it("runs transactions on the pool", async () => {
    await database.db.transaction().execute(async (trx) => {
      await trx
        .insertInto("numbers")
        .values({ id: 2, counter: 1, amount: 1, day: "2024-01-01", at: new Date(), ids: sql`'{}'::int8[]` })
        .execute();
    });
    await expect(
      database.db.transaction().execute(async (trx) => {
        await trx
          .insertInto("numbers")
          .values({ id: 3, counter: 1, amount: 1, day: "2024-01-01", at: new Date(), ids: sql`'{}'::int8[]` })
          .execute();
        throw new Error("abort");
      }),
    ).rejects.toThrow("abort");
    const ids = (await database.db.selectFrom("numbers").select("id").orderBy("id").execute()).map((r) => r.id);
    expect(ids).toEqual([1, 2]);
  });
});

describe("ping", () => {
  it("is false, quickly, when the database is unreachable", async () => {
    const database = await openDatabase({
      databaseUrl: "postgres://postgres@127.0.0.1:1/postgres",
      dataDir: "memory://",
      logger,
    });
    try {
      const started = Date.now();
      expect(await database.ping(1_000)).toBe(false);
      expect(Date.now() - started).toBeLessThan(1_500);
    } finally {
      await database.close();
    }
  });

  it("is false after close", async () => {
    const database = await openDatabase({ dataDir: "memory://", logger });
    await database.close();
    expect(await database.ping()).toBe(false);
  });
});

describe("embedded database on disk", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), "agentplane-db-"));
  });
  afterAll(async () => {
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it("persists across close and reopen, and publishes its port while open", async () => {
    const first = await openDatabase<any>({ dataDir: dir, logger });
    expect(first.kind).toBe("pglite");
    const info = await readEmbeddedInfo(dir);
    expect(info).toMatchObject({ pid: process.pid });
    expect(first.url).toBe(`postgres://postgres@127.0.0.1:${info?.port}/postgres`);
    await sql`create table kept (v text)`.execute(first.db);
    await sql`insert into kept values ('hello')`.execute(first.db);
    await first.close();
    await expect(fsp.access(path.join(dir, EMBEDDED_INFO_FILE))).rejects.toThrow();

    const second = await openDatabase<any>({ dataDir: dir, logger });
    try {
      expect((await sql<{ v: string }>`select v from kept`.execute(second.db)).rows).toEqual([{ v: "hello" }]);
    } finally {
      await second.close();
    }
  });

  it("is reached through the running server by a second client and by another process", async () => {
    const owner = await openDatabase<any>({ dataDir: dir, logger });
    try {
      await sql`insert into kept values ('shared')`.execute(owner.db);

      const again = await connectEmbeddedOrOpen(dir, logger);
      expect(again).toMatchObject({ owned: false, url: owner.url, pid: process.pid });
      const client = new pg.Client({ connectionString: again.url });
      await client.connect();
      expect((await client.query("select count(*)::int as n from kept")).rows).toEqual([{ n: 2 }]);
      await client.end();
      await again.close(); // not ours: a no-op

      // A separate process (as the CLI would be) finds the server through embedded-db.json.
      const script = `
        import pg from "pg"; import { pino } from "pino";
        import { connectEmbeddedOrOpen } from "./services/platform/pglite.js";
        const c = await connectEmbeddedOrOpen(${JSON.stringify(dir)}, pino({ level: "silent" }), { waitMs: 5000 });
        const client = new pg.Client({ connectionString: c.url }); await client.connect();
        const r = await client.query("select v from kept order by v");
        await client.end(); await c.close();
        process.stdout.write(JSON.stringify({ owned: c.owned, pid: c.pid, rows: r.rows }));`;
      const { stdout } = await run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        cwd: path.resolve(import.meta.dirname, "../.."),
        timeout: 30_000,
      });
      expect(JSON.parse(stdout)).toEqual({ owned: false, pid: process.pid, rows: [{ v: "hello" }, { v: "shared" }] });
    } finally {
      await owner.close();
    }
    expect(await readEmbeddedInfo(dir)).toBeNull();
  });

  it("opens a directory once when asked twice at the same time", async () => {
    const [a, b] = await Promise.all([connectEmbeddedOrOpen(dir, logger), connectEmbeddedOrOpen(dir, logger)]);
    try {
      expect([a.owned, b.owned].sort()).toEqual([false, true]);
      expect(a.url).toBe(b.url);
    } finally {
      await a.close();
      await b.close();
    }
    expect(await readEmbeddedInfo(dir)).toBeNull();
  });

  it("lets exactly one of two processes starting together open the directory; the other uses its server", async () => {
    const script = `
      import pg from "pg"; import { pino } from "pino";
      import { connectEmbeddedOrOpen } from "./services/platform/pglite.js";
      const c = await connectEmbeddedOrOpen(${JSON.stringify(dir)}, pino({ level: "silent" }));
      const client = new pg.Client({ connectionString: c.url }); await client.connect();
      const r = await client.query("select count(*)::int as n from kept");
      await client.end();
      await new Promise((resolve) => setTimeout(resolve, 2000)); // keep serving while the other one runs
      await c.close();
      process.stdout.write(JSON.stringify({ owned: c.owned, n: r.rows[0].n }));`;
    const child = () =>
      run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        cwd: path.resolve(import.meta.dirname, "../.."),
        timeout: 60_000,
      }).then(({ stdout }) => JSON.parse(stdout) as { owned: boolean; n: number });
    const results = await Promise.all([child(), child()]);
    expect(results.map((r) => r.owned).sort()).toEqual([false, true]);
    expect(results.map((r) => r.n)).toEqual([2, 2]);
    expect(await readEmbeddedInfo(dir)).toBeNull();
  });

  it("takes over a data directory left by a process that is gone", async () => {
    const { stdout } = await run(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]);
    await fsp.writeFile(path.join(dir, EMBEDDED_INFO_FILE), JSON.stringify({ pid: Number(stdout), port: 1 }));
    const connection = await connectEmbeddedOrOpen(dir, logger, { waitMs: 2_000 });
    try {
      expect(connection.owned).toBe(true);
      expect(await readEmbeddedInfo(dir)).toMatchObject({ pid: process.pid });
    } finally {
      await connection.close();
    }
  });

  it("refuses, with a clear message, a directory held by a live process that does not answer", async () => {
    await fsp.writeFile(path.join(dir, EMBEDDED_INFO_FILE), JSON.stringify({ pid: process.ppid, port: null }));
    try {
      await expect(connectEmbeddedOrOpen(dir, logger, { waitMs: 300 })).rejects.toThrow(
        new RegExp(`held by process ${process.ppid}, which has not started its server`),
      );
    } finally {
      await fsp.rm(path.join(dir, EMBEDDED_INFO_FILE), { force: true });
    }
  });
});

describe("embedded server with several connections", () => {
  it("keeps every client's statements and transactions apart", async () => {
    const server = await connectEmbeddedOrOpen(null, logger);
    const pool = new pg.Pool({ connectionString: server.url, max: 10 });
    try {
      await pool.query("create table tally (k int primary key, n int not null)");
      const big = "x".repeat(300_000); // spans several TCP reads
      const results = await Promise.all(
        Array.from({ length: 150 }, async (_, i) => {
          if (i % 3 === 0)
            return (await pool.query("select length($1::text) + $2::int as v", [big, i])).rows[0].v === big.length + i;
          if (i % 3 === 1)
            return (await pool.query("select $1::text || $2::text as v", [`a${i}`, "b"])).rows[0].v === `a${i}b`;
          const client = await pool.connect();
          try {
            await client.query("begin");
            await client.query("insert into tally values ($1, 1)", [i]);
            await new Promise((resolve) => setTimeout(resolve, 2));
            const row = (await client.query("update tally set n = n + 1 where k = $1 returning n", [i])).rows[0];
            await client.query(i % 2 ? "commit" : "rollback");
            return row.n === 2;
          } finally {
            client.release();
          }
        }),
      );
      expect(results.every(Boolean)).toBe(true);
      expect((await pool.query("select count(*)::int as n from tally")).rows[0].n).toBe(25);
    } finally {
      await pool.end();
      await server.close();
    }
  });

  it("rolls back the transaction of a client that disconnects, and disconnects one idle in a transaction", async () => {
    const server = await connectEmbeddedOrOpen(null, logger, { idleInTransactionTimeoutMs: 300 });
    const pool = new pg.Pool({ connectionString: server.url, max: 2 });
    try {
      const dying = new pg.Client({ connectionString: server.url });
      dying.on("error", () => {});
      await dying.connect();
      await dying.query("begin");
      await dying.query("create table gone (x int)");
      (dying as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
      expect((await pool.query("select to_regclass('gone') as t")).rows[0].t).toBeNull();

      const idle = new pg.Client({ connectionString: server.url });
      const idleError = new Promise<Error>((resolve) => idle.on("error", resolve));
      await idle.connect();
      await idle.query("begin");
      await idle.query("create table stuck (x int)");
      const started = Date.now();
      // Blocked behind the idle transaction until the server disconnects it.
      expect((await pool.query("select to_regclass('stuck') as t")).rows[0].t).toBeNull();
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      expect((await idleError).message).toMatch(/idle-in-transaction timeout|terminated/);
    } finally {
      await pool.end();
      await server.close();
    }
  });

  it("closes while a client is inside a transaction", async () => {
    const server = await connectEmbeddedOrOpen(null, logger);
    const client = new pg.Client({ connectionString: server.url });
    client.on("error", () => {});
    await client.connect();
    await client.query("begin");
    await server.close();
    await expect(client.query("select 1")).rejects.toThrow();
  });
});
