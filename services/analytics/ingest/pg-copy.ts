// Bulk loading through COPY FROM STDIN in Postgres's binary format: the rows are written straight
// into one buffer (no text to escape, no array literal to build and the server to parse, no
// timestamp to format and parse again), and the server inserts them a page at a time.
import { CompiledQuery, sql, type Kysely, type Transaction } from "kysely";
import { from as copyFrom } from "pg-copy-streams";
import type { Database } from "../../database.js";

/** "PGCOPY\n\377\r\n\0", then 32-bit flags and header-extension length (both 0). */
const HEADER = Buffer.from([0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0]);
/** 2000-01-01T00:00:00Z, the epoch of Postgres timestamps (microseconds since), in Unix ms. */
const PG_EPOCH_MS = 946_684_800_000;
const TWO_32 = 2 ** 32;

/**
 * Writes the rows of a binary COPY: for each row `row(fields)`, then each field in the column
 * order of the COPY statement. Integers travel as two 32-bit halves of a double (exact up to
 * 2^53, which is all the token counts and timestamps we store), so no BigInt per value.
 */
export class BinaryCopyWriter {
  private buf: Buffer;
  private pos: number;
  /** The field's index within the current row. */
  private field = 0;
  /**
   * Per field index: the previous row's text value there and where its field (length
   * included) was written. Rows of one batch repeat most values of the row before (organization,
   * user, session, client, type): such a field is copied, not encoded again.
   */
  private readonly lastText: Array<string | null> = [];
  private readonly lastStart: number[] = [];
  private readonly lastEnd: number[] = [];

  constructor(initialBytes = 1 << 20) {
    this.buf = Buffer.allocUnsafe(Math.max(initialBytes, 64));
    HEADER.copy(this.buf, 0);
    this.pos = HEADER.length;
  }

  private ensure(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  private int32(value: number): void {
    const b = this.buf;
    let p = this.pos;
    b[p++] = value >>> 24;
    b[p++] = (value >>> 16) & 0xff;
    b[p++] = (value >>> 8) & 0xff;
    b[p++] = value & 0xff;
    this.pos = p;
  }

  private int64(value: number): void {
    const hi = Math.floor(value / TWO_32);
    this.int32(hi | 0);
    this.int32((value - hi * TWO_32) >>> 0);
  }

  row(fields: number): void {
    this.ensure(2);
    this.buf[this.pos++] = fields >>> 8;
    this.buf[this.pos++] = fields & 0xff;
    this.field = 0;
  }

  /** A text field (UTF-8), or NULL. */
  text(value: string | null): void {
    if (value === null) {
      this.nullField();
      return;
    }
    const field = this.field++;
    if (value === this.lastText[field]) {
      const from = this.lastStart[field]!;
      const to = this.lastEnd[field]!;
      this.ensure(to - from);
      this.buf.copyWithin(this.pos, from, to);
      this.pos += to - from;
      return;
    }
    const n = value.length;
    this.ensure(4 + 3 * n); // UTF-8 takes at most 3 bytes per UTF-16 code unit
    const field0 = this.pos;
    const start = field0 + 4;
    const b = this.buf;
    // ASCII byte by byte (cheaper than a native call for short strings); anything else natively.
    let p = start;
    for (let i = 0; i < n; i++) {
      const c = value.charCodeAt(i);
      if (c >= 0x80) {
        p = start + b.write(value, start, "utf8");
        break;
      }
      b[p++] = c;
    }
    this.int32(p - start);
    this.pos = p;
    this.lastText[field] = value;
    this.lastStart[field] = field0;
    this.lastEnd[field] = p;
  }

  /** A bigint field (an integer within ±2^53), or NULL. */
  int8(value: number | null): void {
    if (value === null) {
      this.nullField();
      return;
    }
    this.field++;
    this.ensure(12);
    this.int32(8);
    this.int64(value);
  }

  /** A float8 field (a finite double), or NULL. */
  float8(value: number | null): void {
    if (value === null) {
      this.nullField();
      return;
    }
    this.field++;
    this.ensure(12);
    this.int32(8);
    this.buf.writeDoubleBE(value, this.pos);
    this.pos += 8;
  }

  /** A timestamptz field from Unix milliseconds. */
  timestamptz(unixMs: number): void {
    this.field++;
    this.ensure(12);
    this.int32(8);
    this.int64((unixMs - PG_EPOCH_MS) * 1000);
  }

  nullField(): void {
    this.field++;
    this.ensure(4);
    this.int32(-1);
  }

  /** The COPY data, trailer included. The writer is done. */
  finish(): Buffer {
    this.ensure(2);
    this.buf[this.pos++] = 0xff;
    this.buf[this.pos++] = 0xff;
    return this.buf.subarray(0, this.pos);
  }
}

/**
 * Starts `copy ... from stdin (format binary)` with the data on the transaction's connection,
 * and resolves once the data has left the process (is in the socket's hands): the server works
 * through it while the caller computes something else. `done` settles with the server's answer
 * (the rows copied, or its error); the transaction's next statement waits for it (pg queues).
 *
 * kysely hands a compiled query's `sql` to pg's `client.query` as it is, and pg runs an object
 * with a `submit` method as a custom query on that connection (pg-copy-streams' COPY stream):
 * so the COPY runs on the transaction's own connection, in the transaction, in turn with its
 * other statements. Only a transaction keeps the connection until the COPY is done (a pool
 * would hand it to the next query at once), hence the type.
 */
export async function startCopy(
  trx: Transaction<Database>,
  statement: string,
  data: Buffer,
): Promise<{ done: Promise<number> }> {
  const stream = copyFrom(statement);
  const done = new Promise<number>((resolve, reject) => {
    stream.on("finish", () => resolve(stream.rowCount));
    stream.on("error", reject);
  });
  done.catch(() => {}); // the caller awaits it later; until then, not an unhandled rejection
  await trx.executeQuery(CompiledQuery.raw(stream as unknown as string));
  const sent = new Promise<void>((resolve, reject) => {
    // Called once the server accepted the COPY and the data was written to the socket.
    stream.write(data, (err) => (err ? reject(err) : resolve()));
  });
  stream.end();
  await Promise.race([sent, done]);
  // The end-of-data message follows the data in the stream's own callbacks: let them run.
  await new Promise((resolve) => setImmediate(resolve));
  return { done };
}

/** Runs a COPY (startCopy) to its end: the rows copied; rejects with the server's error. */
export async function copyInto(trx: Transaction<Database>, statement: string, data: Buffer): Promise<number> {
  return (await startCopy(trx, statement, data)).done;
}

/**
 * Whether the database takes COPY FROM STDIN: Postgres does; the embedded PGlite behind its
 * wire-protocol loopback (platform/pglite.ts) does not. Asked once per database handle.
 */
const copySupport = new WeakMap<Kysely<Database>, Promise<boolean>>();

export function supportsCopy(db: Kysely<Database>): Promise<boolean> {
  let known = copySupport.get(db);
  if (!known) {
    known = sql<{ version: string }>`select version() as version`
      .execute(db)
      .then((r) => !/PGlite/i.test(r.rows[0]?.version ?? ""));
    known.catch(() => copySupport.delete(db));
    copySupport.set(db, known);
  }
  return known;
}
