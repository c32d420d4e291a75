// A call whose client left (or whose deadline passed) gets no more work. Kysely cannot cancel a
// statement that is running, so the check happens where work would start: once a database
// connection is free (under load a request waits longest there, in the pool's queue), and before
// the next step of a multi-step request. A statement already sent runs to its end, bounded by the
// pool's statement_timeout.
import { Code, ConnectError } from "@connectrpc/connect";
import type { Kysely } from "kysely";
import type { Database, Executor } from "../database.js";

/** Throws when the call was abandoned: its signal's reason if that is a ConnectError (a deadline), else Canceled. */
export function stopIfAbandoned(signal: AbortSignal): void {
  if (!signal.aborted) return;
  const reason: unknown = signal.reason;
  throw reason instanceof ConnectError ? reason : new ConnectError("the client cancelled the request", Code.Canceled);
}

/** Runs `work` on a pooled connection once one is free, unless the call was abandoned while it waited. */
export function onConnection<T>(
  db: Kysely<Database>,
  signal: AbortSignal,
  work: (conn: Executor) => Promise<T>,
): Promise<T> {
  return db.connection().execute((conn) => {
    stopIfAbandoned(signal);
    return work(conn);
  });
}
