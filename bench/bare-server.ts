// The floor: the same Postgres read as GetSession (the same repository function: one statement for
// the session and the rest of its tree, over the same kind of pool) behind a bare node:http
// handler — no authentication, no rate limit, no Connect router, no transcoding, JSON.stringify
// of the plain view object. Whatever the edge costs on top of this is the price of the platform.
// The organization is fixed at start (BARE_ORG_ID).
//
//   BARE_PORT, BARE_ORG_ID, DATABASE_URL (else the embedded database of DATA_DIR, reached
//   through the running service's socket)
import { createServer } from "node:http";
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
  const server = createServer((req, res) => {
    const match = req.method === "GET" ? PATH.exec(req.url ?? "") : null;
    if (!match) {
      res.writeHead(404).end();
      return;
    }
    findSessionWithTree(database.db, orgId, decodeURIComponent(match[1]!))
      .then((found) => {
        if (!found) {
          res.writeHead(404).end();
          return;
        }
        const body = JSON.stringify(sessionView(found, found.tree));
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
      })
      .catch((err: unknown) => {
        process.stderr.write(`bare handler failed: ${String(err)}\n`);
        res.writeHead(500).end();
      });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(Number(process.env.BARE_PORT), "127.0.0.1");
  process.once("SIGTERM", () => {
    server.close();
    server.closeAllConnections();
    void database.close().then(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`bare server failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
