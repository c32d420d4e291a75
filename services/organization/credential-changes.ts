// Delivers credential changes to this process: a dedicated Postgres connection LISTENs on the
// channel that migration 0016's triggers notify at commit (a key revoked, a user deleted or its
// role changed, an organization's plan changed, a service account revoked), whoever made the
// change: the API, the CLI in another process, or SQL by hand. Every replica drops the affected
// cache entries within a round trip, not at the cache TTL.
//
// Notifications sent while the connection is down are lost, so the whole cache is dropped on
// every disconnect and reconnect, and `watching()` is false in between (the authenticator then
// trusts a credential for UNWATCHED_CACHE_TTL_MS only).
import type { Logger } from "../platform/logger.js";
import { listenToChannel } from "../platform/pg-listen.js";

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
  const listener = listenToChannel({
    url: options.url,
    channel: CREDENTIALS_CHANNEL,
    name: "agentplane-credentials",
    onPayload: options.onChange,
    onGap: () => options.onChange("*"),
    logger: options.logger,
    maxBackoffMs: options.maxBackoffMs,
  });
  return { watching: () => listener.listening(), close: () => listener.close() };
}
