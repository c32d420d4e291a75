// Wakes this process's event streams when their session changes, whichever replica changed it:
// one LISTEN connection (platform/pg-listen.ts) on SESSION_EVENTS_CHANNEL while at least one
// stream is open, none otherwise. Postgres stays the record: a wake-up only tells a stream to
// read what is new, so a notification lost (the connection was down) costs time, not events.
// Without a Postgres URL (the embedded database) streams are never woken and read every
// POLL_MS instead; so they do while the connection is down.
import type { Logger } from "../platform/logger.js";
import { type ChannelListener, listenToChannel } from "../platform/pg-listen.js";
import { SESSION_EVENTS_CHANNEL } from "./event-queries.js";

/** The LISTEN connection's application_name: open exactly while a stream of this process is. */
export const LISTENER_NAME = "agentplane-session-events";

/** How often a stream reads when no notification can wake it. */
export const POLL_MS = 1_000;

export interface Wakeup {
  /**
   * Resolves once the session may have changed since the last wait (at once if it may already
   * have), after `ms`, or when `signal` aborts.
   */
  wait(ms: number, signal: AbortSignal): Promise<void>;
  /** True when notifications arrive, so a wait may be long. */
  listening(): boolean;
  close(): void;
}

export interface SessionWakeups {
  /** Interest in one session, for as long as a stream is open (the wake-ups between its reads count). */
  subscribe(sessionId: string): Wakeup;
}

interface Subscription {
  changed: boolean;
  wake?: () => void;
}

export function createSessionWakeups(options: { url: string | undefined; logger: Logger }): SessionWakeups {
  const bySession = new Map<string, Set<Subscription>>();
  let listener: ChannelListener | undefined;
  let count = 0;

  const mark = (subs: Iterable<Subscription>) => {
    for (const s of subs) {
      s.changed = true;
      s.wake?.();
    }
  };
  const markAll = () => {
    for (const subs of bySession.values()) mark(subs);
  };

  return {
    subscribe(sessionId) {
      const sub: Subscription = { changed: true };
      let subs = bySession.get(sessionId);
      if (subs === undefined) bySession.set(sessionId, (subs = new Set()));
      subs.add(sub);
      if (count++ === 0 && options.url !== undefined)
        listener = listenToChannel({
          url: options.url,
          channel: SESSION_EVENTS_CHANNEL,
          name: LISTENER_NAME,
          onPayload: (id) => mark(bySession.get(id) ?? []),
          onGap: markAll,
          logger: options.logger,
        });
      let closed = false;
      return {
        listening: () => listener?.listening() ?? false,
        async wait(ms, signal) {
          if (!sub.changed && !signal.aborted)
            await new Promise<void>((resolve) => {
              const done = () => {
                clearTimeout(timer);
                signal.removeEventListener("abort", done);
                sub.wake = undefined;
                resolve();
              };
              const timer = setTimeout(done, ms);
              signal.addEventListener("abort", done, { once: true });
              sub.wake = done;
            });
          sub.changed = false;
        },
        close() {
          if (closed) return;
          closed = true;
          sub.wake?.();
          subs.delete(sub);
          if (subs.size === 0) bySession.delete(sessionId);
          if (--count === 0) {
            void listener?.close();
            listener = undefined;
          }
        },
      };
    },
  };
}
