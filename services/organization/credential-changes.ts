// Delivers credential changes to this process: a dedicated Postgres connection LISTENs on the
// channel that migration 0016's triggers notify at commit (a key revoked, a user deleted or its
// role changed, an organization's plan changed, a service account revoked), whoever made the
// change: the API, the CLI in another process, or SQL by hand. Every replica drops the affected
// cache entries within a round trip, not at the cache TTL.
//
// Notifications sent while the connection is down are lost, so the whole cache is dropped on
// every disconnect and reconnect, and `watching()` is false in between (the authenticator then
// trusts a credential for UNWATCHED_CACHE_TTL_MS only).
import pg from "pg";
import type { Logger } from "../platform/logger.js";

export const CREDENTIALS_CHANNEL = "agentplane_credentials";

export interface CredentialChangeWatch {
  /** True while notifications are being received. */
  watching(): boolean;
  close(): Promise<void>;
}

export interface WatchOptions {
  readonly url: string;
  /** Called with a subject ("user:<id>", "org:<id>", "account:<id>"), or "*" for "anything may have changed". */
  readonly onChange: (subject: string) => void;
  readonly logger: Logger;
  /** Longest wait between reconnection attempts. Default 5 000. */
  readonly maxBackoffMs?: number;
}

export function watchCredentialChanges(options: WatchOptions): CredentialChangeWatch {
  const log = options.logger.child({ component: "credential-changes" });
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
      options.onChange("*");
      if (!closed) log.warn({ err }, "credential change notifications interrupted; reconnecting");
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
      application_name: "agentplane-credentials",
      connectionTimeoutMillis: 5_000,
    });
    client = c;
    c.on("error", (err) => lost(err));
    c.on("end", () => lost());
    c.on("notification", (message) => {
      if (message.channel === CREDENTIALS_CHANNEL && message.payload) options.onChange(message.payload);
    });
    c.connect()
      .then(() => c.query(`LISTEN ${CREDENTIALS_CHANNEL}`))
      .then(() => {
        if (client !== c) return;
        attempt = 0;
        live = true;
        // Whatever changed while nobody listened.
        options.onChange("*");
        log.debug("listening for credential changes");
      })
      .catch((err: Error) => {
        if (client === c) lost(err);
      });
  };

  connect();
  return {
    watching: () => live,
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
