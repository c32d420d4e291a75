/**
 * The embedded database: PGlite (Postgres compiled to WebAssembly) served over the Postgres wire
 * protocol on 127.0.0.1, so the application reaches it through the same `pg` driver it uses for a
 * real Postgres.
 *
 * Why not `PGLiteSocketServer` from `@electric-sql/pglite-socket` (0.2.17)? PGlite is a single
 * Postgres session. That server accepts one connection by default; with `maxConnections > 1` it
 * multiplexes connections *per protocol message*, keeping only explicit transactions together.
 * An extended-protocol query (Parse/Bind/Describe/Execute/Sync) from one connection can therefore
 * be interleaved with another connection's, and both share the session's unnamed statement and
 * portal: when a message arrives in more than one TCP read (large parameters), a client silently
 * receives another client's result. (Reproduced: 3 wrong results in 200 concurrent queries with
 * a 300 kB parameter.) A failed `execProtocolRawStream` also leaves its queue stuck for good.
 *
 * So this module implements the server itself with a *session lock*: a connection takes the lock
 * when it has a message to run and keeps it until the backend reports ReadyForQuery with status
 * idle ('I') at a protocol boundary (after Sync or a simple Query) - i.e. for a whole statement,
 * or for a whole transaction. Clients are thus serialized exactly as if each transaction ran
 * alone, which is correct (serializable) and never interleaves protocol state. A connection that
 * disconnects while holding the lock is rolled back and releases it; one that sits idle inside a
 * transaction longer than `idleInTransactionTimeoutMs` is disconnected.
 *
 * Limits of a shared single session, which the application must respect in embedded mode:
 * session-level state (SET without LOCAL, named prepared statements, temporary tables, session
 * advisory locks) is shared by every connection; `statement_timeout` is not enforced by PGlite.
 *
 * PGlite does not lock its data directory (a second instance happily opens the same files), so a
 * data directory is claimed through `<dataDir>/embedded-db.json` = `{ pid, port }`, created
 * exclusively before PGlite opens and removed on close. Another process (the CLI) that finds a
 * live owner reaches the database through the owner's socket: see `connectEmbeddedOrOpen`.
 */
import { PGlite } from "@electric-sql/pglite";
import { randomBytes } from "node:crypto";
import { promises as fsp } from "node:fs";
import net from "node:net";
import path from "node:path";
import type { Logger } from "pino";

/** `dataDir` value (PGlite's own convention) for a throw-away in-memory database. */
export const IN_MEMORY_DATA_DIR = "memory://";
/** Name of the file that claims a data directory and names the running server. */
export const EMBEDDED_INFO_FILE = "embedded-db.json";
/** Subdirectory of the data directory holding PGlite's files. */
export const PGDATA_SUBDIR = "pgdata";

export interface EmbeddedServerOptions {
  /** Directory to persist under (`<dataDir>/pgdata`); absent, null or `memory://` for in-memory. */
  dataDir?: string | null | undefined;
  logger: Logger;
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
  /** Default 0 (a random free port). */
  port?: number;
  /** Concurrent client connections accepted. Default 64. */
  maxConnections?: number;
  /** Disconnect a client idle inside a transaction for this long (it blocks everyone). Default 60 000; 0 disables. */
  idleInTransactionTimeoutMs?: number;
}

export interface EmbeddedServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Absolute data directory, or null when in memory. */
  readonly dataDir: string | null;
  stats(): { connections: number; waiting: number };
  /** Disconnects every client (rolling back open transactions), closes PGlite and removes the info file. */
  close(): Promise<void>;
}

export interface EmbeddedInfo {
  pid: number;
  /** null while the owner is still starting. */
  port: number | null;
}

export interface EmbeddedConnection {
  /** Connection URL of the server (ours or the other process's). */
  readonly url: string;
  /** True when this call opened PGlite and runs the server; false when it found a live one. */
  readonly owned: boolean;
  /** Process running the server. */
  readonly pid: number;
  /** Closes the server when owned; a no-op otherwise. */
  close(): Promise<void>;
}

export interface ConnectEmbeddedOptions extends Omit<EmbeddedServerOptions, "dataDir" | "logger"> {
  /** How long to wait for another process's server that is starting or not answering. Default 30 000. */
  waitMs?: number;
}

export function isInMemoryDataDir(dataDir: string | null | undefined): boolean {
  return dataDir == null || dataDir === "" || dataDir === IN_MEMORY_DATA_DIR;
}

/** In-process registry of data directories opened by this process (absolute path → server). */
const openHere = new Map<string, Promise<EmbeddedServer>>();
const claimQueues = new Map<string, Promise<unknown>>();

function serialized<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const result = (claimQueues.get(key) ?? Promise.resolve()).then(fn);
  const tail = result.catch(() => {});
  claimQueues.set(key, tail);
  void tail.then(() => {
    if (claimQueues.get(key) === tail) claimQueues.delete(key);
  });
  return result;
}

/**
 * Reaches the embedded database of `dataDir`: if `<dataDir>/embedded-db.json` names a live process
 * whose port accepts connections, returns that server's URL (`owned: false`); otherwise claims the
 * directory, opens PGlite and serves it (`owned: true`). Waits up to `waitMs` for an owner that is
 * still starting (or shutting down), then fails with a clear message rather than open the files
 * twice. A file left behind by a dead process is taken over. `memory://` (or no dataDir) always
 * opens a fresh in-memory database.
 */
export async function connectEmbeddedOrOpen(
  dataDir: string | null | undefined,
  logger: Logger,
  options: ConnectEmbeddedOptions = {},
): Promise<EmbeddedConnection> {
  const { waitMs = 30_000, ...serverOptions } = options;
  if (isInMemoryDataDir(dataDir)) {
    const server = await startServer(null, logger, serverOptions, null);
    return owned(server);
  }
  const dir = path.resolve(dataDir as string);
  const deadline = Date.now() + waitMs;
  await fsp.mkdir(dir, { recursive: true });
  for (;;) {
    // One claim attempt per directory at a time within this process, so a concurrent call sees
    // our claim in `openHere` instead of mistaking our pid in the file for a leftover.
    const step = await serialized(dir, async () => {
      const here = openHere.get(dir);
      if (here) return { kind: "here" as const, here };
      const claim = await claimOrInspect(dir, logger);
      if (claim.kind !== "claimed") return claim;
      const starting = startServer(dir, logger, serverOptions, claim.token);
      openHere.set(dir, starting);
      starting.catch(() => openHere.delete(dir));
      return { kind: "starting" as const, starting, token: claim.token };
    });
    if (step.kind === "here") {
      const server = await step.here;
      return { url: server.url, owned: false, pid: process.pid, close: async () => {} };
    }
    if (step.kind === "starting") {
      try {
        return owned(await step.starting);
      } catch (error) {
        await removeInfoIfOurs(dir, step.token).catch(() => {});
        throw error;
      }
    }
    const claim = step;
    if (claim.kind === "running") {
      logger.debug(
        { dataDir: dir, pid: claim.pid, port: claim.port },
        "using the embedded database server of another process",
      );
      return {
        url: urlFor("127.0.0.1", claim.port),
        owned: false,
        pid: claim.pid,
        close: async () => {},
      };
    }
    if (claim.kind === "retry") {
      await sleep(10);
      continue;
    }
    if (Date.now() >= deadline) {
      const file = path.join(dir, EMBEDDED_INFO_FILE);
      if (claim.pid === 0)
        throw new Error(`embedded database in ${dir} is being claimed by another process (${file} is incomplete)`);
      const where =
        claim.port == null ? "has not started its server" : `does not accept connections on port ${claim.port}`;
      throw new Error(
        `embedded database in ${dir} is held by process ${claim.pid}, which ${where}; ` +
          `stop that process, or remove ${file} if it is not an agentplane process`,
      );
    }
    await sleep(100);
  }
}

/**
 * Starts an embedded server that this process owns. For a directory, fails if another live process
 * holds it (use `connectEmbeddedOrOpen` to share it instead).
 */
export async function startEmbeddedServer(options: EmbeddedServerOptions): Promise<EmbeddedServer> {
  const { dataDir, logger, ...rest } = options;
  const connection = await connectEmbeddedOrOpen(dataDir, logger, { ...rest, waitMs: 0 });
  if (!connection.owned) {
    throw new Error(
      `embedded database in ${path.resolve(dataDir as string)} is already served by process ${connection.pid}`,
    );
  }
  return (connection as OwnedConnection).server;
}

/** Reads `<dataDir>/embedded-db.json`, or null when absent or unreadable. */
export async function readEmbeddedInfo(dataDir: string): Promise<EmbeddedInfo | null> {
  const text = await readInfoText(path.resolve(dataDir));
  return text == null ? null : parseInfo(text);
}

// ---------------------------------------------------------------------------------------------
// Claiming the data directory

interface OwnedConnection extends EmbeddedConnection {
  server: EmbeddedServer;
}

function owned(server: EmbeddedServer): OwnedConnection {
  return { url: server.url, owned: true, pid: process.pid, server, close: () => server.close() };
}

type Claim =
  | { kind: "claimed"; token: string }
  | { kind: "running"; pid: number; port: number }
  | { kind: "busy"; pid: number; port: number | null }
  /** The file changed under us (removed, or a stale one taken away): look again. */
  | { kind: "retry" };

interface InfoFile extends EmbeddedInfo {
  token: string;
}

async function claimOrInspect(dir: string, logger: Logger): Promise<Claim> {
  const file = path.join(dir, EMBEDDED_INFO_FILE);
  const token = randomBytes(12).toString("hex");
  const content = JSON.stringify({ pid: process.pid, port: null, token } satisfies InfoFile);
  try {
    await fsp.writeFile(file, content, { flag: "wx" });
    return { kind: "claimed", token };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  const text = await readInfoText(dir);
  if (text == null) return { kind: "retry" }; // removed meanwhile
  const info = parseInfo(text);
  if (info == null) {
    // Being written right now, or left half-written by a crash.
    const stat = await fsp.stat(file).catch(() => null);
    if (stat && Date.now() - stat.mtimeMs > 5_000) {
      logger.warn({ file }, "removing an unreadable embedded database info file");
      await removeStale(dir, text);
      return { kind: "retry" };
    }
    return { kind: "busy", pid: 0, port: null };
  }
  const ownerAlive = info.pid === process.pid ? false /* not in openHere: a leftover */ : isProcessAlive(info.pid);
  if (!ownerAlive) {
    logger.info({ file, pid: info.pid }, "taking over the embedded database left by a process that is gone");
    await removeStale(dir, text);
    return { kind: "retry" };
  }
  if (info.port != null && (await acceptsConnections("127.0.0.1", info.port, 1_000))) {
    return { kind: "running", pid: info.pid, port: info.port };
  }
  return { kind: "busy", pid: info.pid, port: info.port };
}

/** Removes the info file only if it still holds `expected` (another process may have replaced it). */
async function removeStale(dir: string, expected: string): Promise<void> {
  const file = path.join(dir, EMBEDDED_INFO_FILE);
  const aside = `${file}.stale-${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    await fsp.rename(file, aside);
  } catch {
    return; // someone else removed it
  }
  const moved = await fsp.readFile(aside, "utf8").catch(() => null);
  if (moved !== expected) {
    // We moved a fresh claim made after our read: put it back.
    await fsp.link(aside, file).catch(() => {});
  }
  await fsp.unlink(aside).catch(() => {});
}

async function removeInfoIfOurs(dir: string, token: string): Promise<void> {
  const text = await readInfoText(dir);
  if (text == null) return;
  const info = parseInfo(text) as InfoFile | null;
  if (info && info.token === token) await removeStale(dir, text);
}

async function readInfoText(dir: string): Promise<string | null> {
  try {
    return await fsp.readFile(path.join(dir, EMBEDDED_INFO_FILE), "utf8");
  } catch {
    return null;
  }
}

function parseInfo(text: string): (EmbeddedInfo & { token?: string }) | null {
  try {
    const value = JSON.parse(text) as Record<string, unknown>;
    if (!Number.isInteger(value.pid) || (value.port !== null && !Number.isInteger(value.port))) return null;
    return value as unknown as EmbeddedInfo & { token?: string };
  } catch {
    return null;
  }
}

function isProcessAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function acceptsConnections(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.removeAllListeners();
      socket.on("error", () => {});
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

function urlFor(host: string, port: number): string {
  return `postgres://postgres@${host}:${port}/postgres`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------------------------------------
// The server

async function startServer(
  dir: string | null,
  logger: Logger,
  options: Omit<EmbeddedServerOptions, "dataDir" | "logger">,
  token: string | null,
): Promise<EmbeddedServer> {
  const host = options.host ?? "127.0.0.1";
  const maxConnections = options.maxConnections ?? 64;
  const idleInTransactionTimeoutMs = options.idleInTransactionTimeoutMs ?? 60_000;
  const log = logger.child({ component: "embedded-db" });

  const started = Date.now();
  let pglite: PGlite;
  try {
    pglite = dir ? await PGlite.create(path.join(dir, PGDATA_SUBDIR)) : await PGlite.create();
  } catch (error) {
    const where = dir ? path.join(dir, PGDATA_SUBDIR) : IN_MEMORY_DATA_DIR;
    throw new Error(`could not open the embedded database in ${where}: ${(error as Error).message}`, { cause: error });
  }
  const lock = new SessionLock();
  const connections = new Set<ClientConnection>();
  let closing: Promise<void> | null = null;

  const context: ServerContext = {
    pglite,
    lock,
    log,
    idleInTransactionTimeoutMs,
    isClosing: () => closing !== null,
  };

  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    if (closing) {
      socket.destroy();
      return;
    }
    if (connections.size >= maxConnections) {
      socket.on("error", () => {});
      socket.end(errorResponse("FATAL", "53300", "sorry, too many clients already"));
      return;
    }
    const connection = new ClientConnection(socket, context, () => connections.delete(connection));
    connections.add(connection);
  });

  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port ?? 0, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (error) {
    await pglite.close().catch(() => {});
    throw error;
  }
  server.on("error", (error) => log.error({ err: error }, "embedded database server error"));
  const port = (server.address() as net.AddressInfo).port;
  const url = urlFor(host, port);

  if (dir && token) {
    // Publish the port atomically (readers never see a partial file).
    const file = path.join(dir, EMBEDDED_INFO_FILE);
    const tmp = `${file}.${token}.tmp`;
    await fsp.writeFile(tmp, JSON.stringify({ pid: process.pid, port, token } satisfies InfoFile));
    await fsp.rename(tmp, file);
  }
  log.info({ dataDir: dir ?? IN_MEMORY_DATA_DIR, port, ms: Date.now() - started }, "embedded database started");

  const close = async () => {
    for (const connection of connections) connection.terminate();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    // Every terminated connection queued its rollback on the lock before us.
    await lock.acquire(CLOSER);
    try {
      await pglite.close();
    } catch (error) {
      log.error({ err: error }, "closing the embedded database failed");
    } finally {
      lock.release(CLOSER);
    }
    if (dir && token) {
      openHere.delete(dir);
      await removeInfoIfOurs(dir, token).catch((error: unknown) =>
        log.warn({ err: error }, "could not remove the embedded database info file"),
      );
    }
    log.info({ dataDir: dir ?? IN_MEMORY_DATA_DIR }, "embedded database closed");
  };

  return {
    url,
    host,
    port,
    dataDir: dir,
    stats: () => ({ connections: connections.size, waiting: lock.waiting }),
    close: () => (closing ??= close()),
  };
}

interface ServerContext {
  pglite: PGlite;
  lock: SessionLock;
  log: Logger;
  idleInTransactionTimeoutMs: number;
  isClosing(): boolean;
}

const CLOSER = Symbol("closer");

/** FIFO mutex over the single PGlite session. */
class SessionLock {
  private holder: unknown = null;
  private readonly queue: Array<{ owner: unknown; grant: () => void }> = [];

  get waiting(): number {
    return this.queue.length;
  }

  acquire(owner: unknown): Promise<void> {
    if (this.holder === null) {
      this.holder = owner;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.queue.push({ owner, grant: resolve }));
  }

  release(owner: unknown): void {
    if (this.holder !== owner) return;
    const next = this.queue.shift();
    this.holder = next ? next.owner : null;
    next?.grant();
  }
}

// Frontend (client) message codes in the startup phase.
const PROTOCOL_3 = 196608;
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
/** Extended-protocol messages after which the backend waits for more (no ReadyForQuery until Sync). */
const EXTENDED = new Set(["P", "B", "D", "E", "C", "H"]);
const SYNC = frontendMessage("S", Buffer.alloc(0));
const ROLLBACK = frontendMessage("Q", Buffer.from("ROLLBACK\0"));
const MAX_MESSAGE_BYTES = 1 << 30;

interface Pending {
  /** "startup" for the untyped startup packet, else the message type byte. */
  type: string;
  bytes: Buffer;
}

/**
 * One client socket. Messages are parsed as they arrive and run under the session lock in
 * batches; the lock is released only when the backend is idle at a protocol boundary.
 */
class ClientConnection {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private phase: "startup" | "ready" = "startup";
  private readonly pending: Pending[] = [];
  private holding = false;
  private running = false;
  private closed = false;
  private terminateRequested = false;
  /** An extended-protocol sequence was started and not yet Synced. */
  private midExtended = false;
  /** Last 6 bytes of backend output: enough to recognise a trailing ReadyForQuery. */
  private tail = Buffer.alloc(0);
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly socket: net.Socket,
    private readonly ctx: ServerContext,
    private readonly onGone: () => void,
  ) {
    socket.on("data", (chunk) => this.onData(chunk));
    socket.on("error", (error) => {
      ctx.log.debug({ err: error }, "embedded database client socket error");
    });
    socket.on("close", () => this.terminate());
  }

  /** Ends the connection; its transaction, if any, is rolled back. */
  terminate(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending.length = 0;
    this.clearIdleTimer();
    this.socket.destroy();
    if (!this.running) void this.cleanup();
  }

  private onData(chunk: Buffer): void {
    if (this.closed || this.terminateRequested) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    try {
      this.parse();
    } catch (error) {
      this.ctx.log.debug({ err: error }, "embedded database protocol error");
      this.socket.write(errorResponse("FATAL", "08P01", (error as Error).message));
      this.terminate();
      return;
    }
    this.kick();
  }

  private parse(): void {
    for (;;) {
      if (this.phase === "startup") {
        if (this.buffered < 8) return;
        const head = this.peek(8);
        const length = head.readInt32BE(0);
        const code = head.readInt32BE(4);
        if (length < 8 || length > 10_000) throw new Error("invalid startup packet");
        if (this.buffered < length) return;
        const packet = this.take(length);
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          this.socket.write("N");
        } else if (code === CANCEL_REQUEST) {
          // PGlite cannot cancel a running statement; the protocol expects no answer.
          this.terminate();
          return;
        } else if (code === PROTOCOL_3) {
          this.pending.push({ type: "startup", bytes: packet });
          this.phase = "ready";
        } else {
          throw new Error(`unsupported frontend protocol ${code >>> 16}.${code & 0xffff}`);
        }
        continue;
      }
      if (this.buffered < 5) return;
      const head = this.peek(5);
      const type = String.fromCharCode(head[0] as number);
      const length = head.readInt32BE(1);
      if (length < 4 || length > MAX_MESSAGE_BYTES) throw new Error(`invalid message length ${length}`);
      if (this.buffered < length + 1) return;
      const bytes = this.take(length + 1);
      if (type === "X") {
        this.terminateRequested = true;
        this.chunks = [];
        this.buffered = 0;
        return;
      }
      this.pending.push({ type, bytes });
    }
  }

  /** The first n buffered bytes (n <= buffered), joining chunks only when needed. */
  private peek(n: number): Buffer {
    const first = this.chunks[0] as Buffer;
    if (first.length >= n) return first;
    const joined = Buffer.concat(this.chunks, this.buffered);
    this.chunks = [joined];
    return joined;
  }

  private take(n: number): Buffer {
    const all = this.peek(n);
    const taken = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest, ...this.chunks.slice(1)] : this.chunks.slice(1);
    this.buffered -= n;
    return taken;
  }

  private kick(): void {
    if (this.running || this.closed) return;
    if (this.pending.length === 0) {
      if (this.terminateRequested) this.terminate();
      return;
    }
    this.running = true;
    void this.run().finally(() => {
      this.running = false;
      if (this.closed) void this.cleanup();
      else this.kick();
    });
  }

  private async run(): Promise<void> {
    while (this.pending.length > 0 && !this.closed) {
      if (!this.holding) {
        await this.ctx.lock.acquire(this);
        this.holding = true;
        if (this.ctx.isClosing()) this.terminate();
        if (this.closed) return;
      }
      this.clearIdleTimer();
      const batch = this.takeBatch();
      const last = batch[batch.length - 1] as Pending;
      try {
        await this.exec(Buffer.concat(batch.map((m) => m.bytes)), true);
      } catch (error) {
        this.ctx.log.error({ err: error }, "embedded database failed to execute a message");
        this.socket.write(errorResponse("FATAL", "XX000", `embedded database error: ${(error as Error).message}`));
        this.terminate();
        return;
      }
      if (EXTENDED.has(last.type)) this.midExtended = true;
      else if (last.type === "S" || last.type === "Q" || last.type === "F" || last.type === "startup")
        this.midExtended = false;
      if (!this.midExtended && this.readyStatus() === "I") {
        this.holding = false;
        this.ctx.lock.release(this);
      } else if (this.pending.length === 0) {
        this.startIdleTimer();
      }
    }
  }

  /** A startup packet runs alone; typed messages run together. */
  private takeBatch(): Pending[] {
    if ((this.pending[0] as Pending).type === "startup") return this.pending.splice(0, 1);
    const end = this.pending.findIndex((m) => m.type === "startup");
    return this.pending.splice(0, end === -1 ? this.pending.length : end);
  }

  private async exec(message: Buffer, forward: boolean): Promise<void> {
    const { pglite } = this.ctx;
    await pglite.runExclusive(() =>
      pglite.execProtocolRawStream(new Uint8Array(message.buffer, message.byteOffset, message.byteLength), {
        onRawData: (data) => {
          // `data` is a view into wasm memory that is reused: copy it.
          const copy = Buffer.from(data);
          this.tail = copy.length >= 6 ? copy.subarray(copy.length - 6) : Buffer.concat([this.tail, copy]).subarray(-6);
          if (forward && !this.socket.destroyed) this.socket.write(copy);
        },
      }),
    );
  }

  /** Transaction status of a trailing ReadyForQuery in the output so far, else null. */
  private readyStatus(): string | null {
    const t = this.tail;
    if (t.length === 6 && t[0] === 0x5a /* Z */ && t.readInt32BE(1) === 5) return String.fromCharCode(t[5] as number);
    return null;
  }

  /** Leaves the session idle for the next client and releases the lock. */
  private async cleanup(): Promise<void> {
    if (!this.holding) {
      this.onGone();
      return;
    }
    try {
      if (this.midExtended || this.readyStatus() === null) await this.exec(SYNC, false);
      if (this.readyStatus() !== "I") await this.exec(ROLLBACK, false);
    } catch (error) {
      this.ctx.log.warn({ err: error }, "embedded database could not reset the session after a client left");
    } finally {
      this.midExtended = false;
      this.holding = false;
      this.ctx.lock.release(this);
      this.onGone();
    }
  }

  private startIdleTimer(): void {
    const ms = this.ctx.idleInTransactionTimeoutMs;
    if (ms <= 0) return;
    this.idleTimer = setTimeout(() => {
      this.ctx.log.warn(
        { timeoutMs: ms },
        "embedded database: disconnecting a client idle inside a transaction (it blocks every other client)",
      );
      this.socket.write(errorResponse("FATAL", "25P03", "terminating connection due to idle-in-transaction timeout"));
      this.terminate();
    }, ms);
    this.idleTimer.unref();
  }

  private clearIdleTimer(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }
}

function frontendMessage(type: string, body: Buffer): Buffer {
  const out = Buffer.alloc(5 + body.length);
  out.write(type, 0, "latin1");
  out.writeInt32BE(4 + body.length, 1);
  body.copy(out, 5);
  return out;
}

/** A backend ErrorResponse message. */
function errorResponse(severity: string, code: string, message: string): Buffer {
  const field = (tag: string, value: string) =>
    Buffer.concat([Buffer.from(tag), Buffer.from(value, "utf8"), Buffer.from([0])]);
  const body = Buffer.concat([
    field("S", severity),
    field("V", severity),
    field("C", code),
    field("M", message),
    Buffer.from([0]),
  ]);
  return frontendMessage("E", body);
}
