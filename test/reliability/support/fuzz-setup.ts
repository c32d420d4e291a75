// One server and one seeded organization per fuzz file (issue 10: share a server per file).
import { randomUUID } from "node:crypto";
import { startProvisioningWorker } from "../../../services/computers/provisioning-worker.js";
import { api } from "../../support/fixtures.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { endpoints, WEBHOOK_URL, type Endpoint } from "./endpoints.js";
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
  // The real provisioning worker, without E2B configured: an e2b computer's first step fails,
  // which is how a computer comes to need a retry. It looks for work often, so a fresh failed
  // computer is ready in a few tens of milliseconds.
  const provisioner = startProvisioningWorker({
    db: server.platform.db,
    e2b: undefined,
    logger: server.platform.logger,
    pollIntervalMs: 20,
  });
  const close = async () => {
    await provisioner.stop();
    await server.close();
  };
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
    const call = async (path: string, init: Parameters<typeof api>[3], want: number) => {
      const res = await api(server.restUrl, org.members.owner.key, path, init);
      if (res.status !== want) throw new Error(`${init?.method ?? "GET"} ${path}: ${res.status} ${res.text}`);
      return res.json;
    };
    const computer = async (provider: "byom" | "e2b") =>
      (
        await call(
          "/api/v0/computers",
          { method: "POST", body: { name: `fuzz-${randomUUID()}`, remoteUser: "dev", provider } },
          201,
        )
      ).id as string;
    const failedComputer = async () => {
      const id = await computer("e2b");
      for (let i = 0; i < 500; i++) {
        const row = await server.platform.db
          .selectFrom("computers")
          .select("status")
          .where("id", "=", id)
          .executeTakeFirstOrThrow();
        if (row.status === "error") return id;
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error(`computer ${id} did not fail its provisioning`);
    };
    const busyComputer = await computer("byom");
    await call(
      "/api/v0/sessions",
      { method: "POST", body: { title: "keeps its computer busy", computerId: busyComputer, text: "wait" } },
      201,
    );
    const webhook = await call(
      "/api/v0/webhooks",
      { method: "POST", body: { url: WEBHOOK_URL, events: ["message.created"], description: "kept" } },
      201,
    );
    // Room for two more webhooks (a case may make a fresh one and then create another): when
    // the organization nears its 20, every webhook but the kept one goes.
    const webhookUrl = async () => {
      const { webhooks } = await call("/api/v0/webhooks?limit=100", {}, 200);
      if (webhooks.length >= 18)
        for (const w of webhooks as { id: string }[])
          if (w.id !== webhook.id) await call(`/api/v0/webhooks/${w.id}`, { method: "DELETE" }, 204);
      return WEBHOOK_URL;
    };
    const freshWebhook = async () =>
      (
        await call(
          "/api/v0/webhooks",
          { method: "POST", body: { url: await webhookUrl(), events: ["session.status_changed"] } },
          201,
        )
      ).id as string;
    return {
      server,
      org,
      all: endpoints(org, {
        fuzzComputer: { id: fuzzComputer.json.id },
        freshSession,
        freshComputer: () => computer("byom"),
        failedComputer,
        busyComputer: { id: busyComputer },
        webhook: { id: webhook.id },
        webhookUrl,
        freshWebhook,
      }),
      async close() {
        closeAgent();
        await close();
      },
    };
  } catch (e) {
    await close();
    throw e;
  }
}
