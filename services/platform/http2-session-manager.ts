// The HTTP/2 session manager of our gRPC clients (the edge's upstream): connect-node's own, with
// the fix for connectrpc/connect-es#1768 (open upstream; PR #1769). When a GOAWAY arrives on a
// connection without open streams (a backend shutting down: SIGTERM, a rolling update), the
// manager destroys the connection with an error that Node.js raises only once the socket has
// closed. If the manager has moved on by then (the next request found the connection destroyed
// and reconnected), it has removed its error listener, and that late error crashes the process.
// Seen here: an edge process (SERVICES=edge) died while a backend was replaced under load
// (test/reliability/rolling-restart.test.ts, a few runs in a hundred). As upstream's abort()
// already does for the connections it aborts, every connection the manager leaves gets a
// listener that swallows such a late error: the requests on it got their own errors.
import type { ClientHttp2Session } from "node:http2";
import { Http2SessionManager } from "@connectrpc/connect-node";

/** The manager's private parts this fix reaches into (dist/esm/http2-session-manager.js). */
interface ManagerInternals {
  s: { t: string; conn?: ClientHttp2Session };
  setState(state: unknown): void;
}

const swallowLateError = () => {};

export function createHttp2SessionManager(url: string): Http2SessionManager {
  const manager = new Http2SessionManager(url);
  const internals = manager as unknown as ManagerInternals;
  const setState = internals.setState.bind(manager);
  internals.setState = (state) => {
    const leaving = internals.s;
    if (leaving.t === "ready" && leaving.conn !== undefined && typeof leaving.conn.on === "function")
      leaving.conn.on("error", swallowLateError);
    setState(state);
  };
  return manager;
}
