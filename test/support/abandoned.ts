// Helpers for tests of abandoned calls (platform/abandoned.ts): a signal already aborted the way a
// client that left aborts it, the gRPC code a call failed with, and a database handle that counts
// the statements sent through it (an abandoned call sends none).
import { Code, ConnectError } from "@connectrpc/connect";
import type { Kysely } from "kysely";

export function abortedSignal(reason: unknown = new Error("client disconnected")): AbortSignal {
  const controller = new AbortController();
  controller.abort(reason);
  return controller.signal;
}

export async function codeOf(p: unknown): Promise<Code> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err).code;
  }
  throw new Error("expected the call to fail");
}

/** `db` with a counter of the statements compiled through it (raw SQL included). */
export function countingStatements<DB>(db: Kysely<DB>): { db: Kysely<DB>; count: () => number; reset: () => void } {
  let statements = 0;
  const counted = db.withPlugin({
    transformQuery: (args) => {
      statements++;
      return args.node;
    },
    transformResult: async (args) => args.result,
  });
  return { db: counted, count: () => statements, reset: () => (statements = 0) };
}
