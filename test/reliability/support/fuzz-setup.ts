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
    // A session per case that consumes one (endpoints.ts `Fresh`), made as a client would.
    const freshSession = async () => {
      const created = await api(server.restUrl, org.members.owner.key, "/api/v0/sessions", {
        method: "POST",
        body: { title: "fuzz fresh session", text: "work for the fuzzer" },
      });
      if (created.status !== 201) throw new Error(`creating a session failed: ${created.status} ${created.text}`);
      return created.json.sessionId as string;
    };
    return {
      server,
      org,
      all: endpoints(org, { fuzzComputer: { id: fuzzComputer.json.id }, freshSession }),
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
