// One server and one seeded organization per fuzz file (issue 10: share a server per file).
import { api } from "../../support/fixtures.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { endpoints, type Endpoint } from "./endpoints.js";
import { closeAgent } from "./raw-http.js";
import { seedOrg, type Org } from "./world.js";

export interface FuzzTarget {
  server: TestServer;
  org: Org;
  all: Endpoint[];
  close(): Promise<void>;
}

export async function startFuzzTarget(): Promise<FuzzTarget> {
  const server = await startTestServer();
  try {
    const org = await seedOrg(server.platform.db, server.restUrl, server.internalGrpcUrl, "A");
    // PATCH /computers fuzzing renames this one, so the GET-by-name target keeps its name.
    const fuzzComputer = await api(server.restUrl, org.members.owner.key, "/api/v0/computers", {
      method: "POST",
      body: { name: "fuzz-patch-target", remoteUser: "dev" },
    });
    if (fuzzComputer.status !== 201)
      throw new Error(`creating the PATCH target failed: ${fuzzComputer.status} ${fuzzComputer.text}`);
    return {
      server,
      org,
      all: endpoints(org, { id: fuzzComputer.json.id }),
      async close() {
        closeAgent();
        await server.close();
      },
    };
  } catch (e) {
    await server.close();
    throw e;
  }
}
