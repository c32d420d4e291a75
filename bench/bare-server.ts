// The floor: the same Postgres read as GetSession (the same repository function: one statement for
// the session and the rest of its tree, over the same kind of pool) behind a bare node:http
// handler — no authentication, no rate limit, no Connect router, no transcoding, JSON.stringify
// of the plain view object. Whatever the edge costs on top of this is the price of the platform.
// The organization is fixed at start (BARE_ORG_ID). The same handler answers on a cleartext
// HTTP/2 listener too (BARE_H2_PORT, node:http2's stream API, the floor of the gRPC path's transport).
//
//   BARE_PORT, BARE_H2_PORT (optional), BARE_ORG_ID, DATABASE_URL (else the embedded database of
//   DATA_DIR, reached through the running service's socket)
import { createServer } from "node:http";
import { createServer as createH2Server, type Http2Session } from "node:http2";
import { pino } from "pino";
import type { Database } from "../services/database.js";
import { openDatabase } from "../services/platform/db.js";
import { sessionView } from "../services/sessions/views.js";
import { findSessionWithTree } from "../services/sessions/tree-queries.js";

const PATH = /^\/sessions\/([^/?]+)$/;

async function main() {
  const orgId = process.env.BARE_ORG_ID;
  if (!orgId) throw new Error("BARE_ORG_ID is required");
  const database = await openDatabase<Database>({
    databaseUrl: process.env.DATABASE_URL || undefined,
    dataDir: process.env.DATA_DIR || ".data",
    logger: pino({ level: "warn" }),
  });
  /** The JSON of the session at `path` (method GET), or the status to answer instead. */
  const answer = async (method: string | undefined, path: string | undefined): Promise<string | number> => {
    const match = method === "GET" ? PATH.exec(path ?? "") : null;
    if (!match) return 404;
    try {
      const found = await findSessionWithTree(database.db, orgId, decodeURIComponent(match[1]!));
      return found ? JSON.stringify(sessionView(found, found.tree)) : 404;
    } catch (err) {
      process.stderr.write(`bare handler failed: ${String(err)}\n`);
      return 500;
    }
  };
  const server = createServer((req, res) => {
    void answer(req.method, req.url).then((body) => {
      if (typeof body === "number") res.writeHead(body).end();
      else
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(Number(process.env.BARE_PORT), "127.0.0.1");
  const h2 = createH2Server();
  const h2Sessions = new Set<Http2Session>();
  h2.on("session", (session) => {
    h2Sessions.add(session);
    session.once("close", () => h2Sessions.delete(session));
  });
  h2.on("stream", (stream, headers) => {
    void answer(headers[":method"], headers[":path"]).then((body) => {
      if (stream.destroyed) return;
      if (typeof body === "number") stream.respond({ ":status": body }, { endStream: true });
      else {
        stream.respond({
          ":status": 200,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
        });
        stream.end(body);
      }
    });
  });
  if (process.env.BARE_H2_PORT) h2.listen(Number(process.env.BARE_H2_PORT), "127.0.0.1");
  process.once("SIGTERM", () => {
    server.close();
    server.closeAllConnections();
    h2.close();
    for (const session of h2Sessions) session.destroy();
    void database.close().then(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`bare server failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
