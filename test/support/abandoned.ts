// Helpers for tests of abandoned calls (platform/abandoned.ts): a signal already aborted the way a
// client that left aborts it, the context of a call made straight to an implementation with that
// signal, the gRPC code a call failed with, and a database handle that counts the statements sent
// through it (an abandoned call sends none).
import type { DescMethod } from "@bufbuild/protobuf";
import {
  type Code,
  ConnectError,
  createContextValues,
  createHandlerContext,
  type HandlerContext,
} from "@connectrpc/connect";
import type { Kysely } from "kysely";
import { kPrincipal, kWorkload, type Principal, type WorkloadPrincipal } from "../../services/platform/context.js";

export function abortedSignal(reason: unknown = new Error("client disconnected")): AbortSignal {
  const controller = new AbortController();
  controller.abort(reason);
  return controller.signal;
}

/**
 * The context of a call made straight to a method's implementation, as `caller` (a user, or a
 * workload for the internal services): for what a transport cannot set up, such as a call its
 * client has already abandoned (`signal` aborted).
 */
export function directCallContext(
  method: DescMethod,
  caller: Principal | WorkloadPrincipal,
  signal: AbortSignal,
): HandlerContext {
  const values = createContextValues();
  if ("accountId" in caller) values.set(kWorkload, caller);
  else values.set(kPrincipal, caller);
  return createHandlerContext({
    service: method.parent,
    method,
    protocolName: "test",
    requestMethod: "POST",
    url: `test:///${method.name}`,
    requestSignal: signal,
    contextValues: values,
  });
}

/** The code a call failed with: `call` is its promise, or a function making the call (a throw counts). */
export async function codeOf(call: unknown): Promise<Code> {
  try {
    await (typeof call === "function" ? Promise.resolve().then(call as () => unknown) : call);
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
