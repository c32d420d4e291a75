// A dedicated Postgres connection that LISTENs on one channel and reconnects with backoff when it
// drops. Postgres delivers a NOTIFY at the commit of the transaction that sent it, so a listener
// hears of a change only once it is visible. Notifications sent while the connection is down are
// lost: onGap is called on every (re)connection and on every loss of a live connection, so the
// consumer can treat "anything may have changed" (drop a cache, re-read what it watches).
import pg from "pg";
import type { Logger } from "./logger.js";

export interface ChannelListener {
  /** True while notifications are being received. */
  listening(): boolean;
  close(): Promise<void>;
}

export interface ListenOptions {
  readonly url: string;
  /** The channel: an SQL identifier (letters, digits, underscores). */
  readonly channel: string;
  /** Shown as the connection's application_name and in logs. */
  readonly name: string;
  readonly onPayload: (payload: string) => void;
  /** Notifications may have been missed: just connected, or the connection was lost. */
  readonly onGap: () => void;
  readonly logger: Logger;
  /** Longest wait between reconnection attempts. Default 5 000. */
  readonly maxBackoffMs?: number;
}

const CHANNEL = /^[a-z_][a-z0-9_]*$/;

export function listenToChannel(options: ListenOptions): ChannelListener {
  if (!CHANNEL.test(options.channel)) throw new Error(`not a channel name: ${options.channel}`);
  const log = options.logger.child({ component: options.name });
  const maxBackoff = options.maxBackoffMs ?? 5_000;
  let client: pg.Client | undefined;
  let live = false;
  let closed = false;
  let attempt = 0;
  let timer: NodeJS.Timeout | undefined;

  const lost = (err?: Error) => {
    if (client === undefined) return;
    client.removeAllListeners();
    client.on("error", () => {});
    void client.end().catch(() => {});
    client = undefined;
    if (live) {
      live = false;
      options.onGap();
      if (!closed) log.warn({ err }, `${options.channel} notifications interrupted; reconnecting`);
    }
    if (!closed) schedule();
  };

  const schedule = () => {
    const delay = Math.min(maxBackoff, 100 * 2 ** Math.min(attempt++, 6));
    timer = setTimeout(connect, delay);
    timer.unref();
  };

  const connect = () => {
    if (closed) return;
    const c = new pg.Client({
      connectionString: options.url,
      keepAlive: true,
      application_name: options.name,
      connectionTimeoutMillis: 5_000,
    });
    client = c;
    c.on("error", (err) => lost(err));
    c.on("end", () => lost());
    c.on("notification", (message) => {
      if (message.channel === options.channel && message.payload) options.onPayload(message.payload);
    });
    c.connect()
      .then(() => c.query(`LISTEN ${options.channel}`))
      .then(() => {
        if (client !== c) return;
        attempt = 0;
        live = true;
        // Whatever changed while nobody listened.
        options.onGap();
        log.debug(`listening on ${options.channel}`);
      })
      .catch((err: Error) => {
        if (client === c) lost(err);
      });
  };

  connect();
  return {
    listening: () => live,
    async close() {
      closed = true;
      clearTimeout(timer);
      const c = client;
      client = undefined;
      live = false;
      if (c) {
        c.removeAllListeners();
        c.on("error", () => {});
        await c.end().catch(() => {});
      }
    },
  };
}
