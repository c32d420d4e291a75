// A TCP proxy in front of Postgres with the faults the reliability tests inject:
//   cut()                every connection dropped, new ones refused, until restore();
//   loseNextCommitReply() the next COMMIT reaches Postgres and commits, but its answer never
//                        comes back: the connection dies right there, as when the network or the
//                        server goes away between commit and reply — the case only an
//                        idempotency key can make safe to retry;
//   slow(ms)             every chunk from Postgres is held back ms before it is passed on.
// It counts the connections open through it, so a test can see whether they pile up, and the
// statements that name a table (statementsNaming), so a test can see which requests queried it.
import { connect, createServer, type Socket } from "node:net";

export interface PgProxy {
  readonly port: number;
  cut(): void;
  restore(): void;
  loseNextCommitReply(): Promise<void>;
  slow(delayMs: number): void;
  /** Connections open now, and the most open at once since the last reset. */
  readonly open: number;
  readonly peak: number;
  /** Connections opened since the last resetPeak(). */
  readonly opened: number;
  resetPeak(): void;
  /** Client messages sent since the proxy started that contain `text` (e.g. a table's quoted name). */
  statementsNaming(text: string): number;
  close(): Promise<void>;
}

// CommandComplete ('C') carrying the tag "COMMIT".
const COMMIT_COMPLETE = Buffer.concat([Buffer.from("C"), Buffer.from([0, 0, 0, 11]), Buffer.from("COMMIT\0")]);

export async function startPgProxy(targetHost: string, targetPort: number): Promise<PgProxy> {
  let open = true;
  let delayMs = 0;
  let peak = 0;
  let opened = 0;
  let losing: (() => void) | undefined;
  const pairs = new Set<[Socket, Socket]>();
  // The beginning of each chunk clients sent (a statement's text is at its start), bounded.
  const sent: Buffer[] = [];

  const server = createServer((client) => {
    if (!open) return void client.destroy();
    const upstream = connect(targetPort, targetHost);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    opened++;
    peak = Math.max(peak, pairs.size);
    const kill = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on("error", kill).on("close", kill);
    upstream.on("error", kill).on("close", kill);
    client.on("data", (chunk: Buffer) => {
      sent.push(chunk.length > 4096 ? chunk.subarray(0, 4096) : chunk);
      if (sent.length > 200_000) sent.splice(0, 100_000);
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (losing && chunk.includes(COMMIT_COMPLETE)) {
        const done = losing;
        losing = undefined;
        kill();
        done();
        return;
      }
      if (delayMs > 0) {
        upstream.pause();
        setTimeout(() => {
          if (!client.destroyed) client.write(chunk);
          upstream.resume();
        }, delayMs);
      } else {
        client.write(chunk);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const killAll = () => {
    for (const [c, u] of pairs) {
      c.destroy();
      u.destroy();
    }
    pairs.clear();
  };
  return {
    port: (server.address() as { port: number }).port,
    cut() {
      open = false;
      killAll();
    },
    restore() {
      open = true;
    },
    loseNextCommitReply: () => new Promise<void>((resolve) => (losing = resolve)),
    slow(ms) {
      delayMs = ms;
    },
    get open() {
      return pairs.size;
    },
    get peak() {
      return peak;
    },
    get opened() {
      return opened;
    },
    resetPeak() {
      peak = pairs.size;
      opened = 0;
    },
    statementsNaming(text) {
      const needle = Buffer.from(text);
      return sent.filter((chunk) => chunk.includes(needle)).length;
    },
    close: () =>
      new Promise<void>((resolve) => {
        killAll();
        server.close(() => resolve());
      }),
  };
}
