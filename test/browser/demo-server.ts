// The real server (test/support/server.ts) with the demo data `npm start` writes, plus a
// member's key: what the browser tests and `npm run screenshots` open the dashboard against.
import { rm } from "node:fs/promises";
import { ensureDemoOrganization, writeDemoData } from "../../services/demo.js";
import { createApiKey, createUser } from "../../services/organization/queries.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { buildDashboard } from "./build.js";

export interface DemoServer {
  server: TestServer;
  /** Stops the server and removes its dashboard build. */
  close(): Promise<void>;
  /** The page's address: the REST port serves the dashboard at GET /. */
  url: string;
  orgId: string;
  ownerKey: string;
  memberKey: string;
}

/** The demo `npm start` writes (30 days, 12 users), on a server serving a fresh build of web/. */
export async function startDemoServer(options = { days: 30, users: 12 }): Promise<DemoServer> {
  const dashboardDir = await buildDashboard();
  const server = await startTestServer({ DASHBOARD_DIR: dashboardDir });
  const close = async () => {
    await server.close();
    await rm(dashboardDir, { recursive: true, force: true });
  };
  try {
    const db = server.platform.db;
    const demo = await ensureDemoOrganization(db);
    await writeDemoData(db, demo.orgId, options);
    const member = await createUser(db, { orgId: demo.orgId, email: "member@demo.agentplane.dev", role: "member" });
    return {
      server,
      close,
      url: `${server.restUrl}/`,
      orgId: demo.orgId,
      ownerKey: demo.apiKey!,
      memberKey: (await createApiKey(db, demo.orgId, member.id)).key,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
