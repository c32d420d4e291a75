// The server the RPC fuzzer attacks: the real binary (`agentplane serve`) in a child process, so
// that its memory is measured apart from the test's, against a fresh database that the test
// seeds with an organization (every role, demo data in every area, sessions, messages, a
// computer with a host, a readiness report) and with leases on sessions, so that generated
// requests carry real IDs and get past validation into the database.
import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { SessionRunnerService } from "../../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import type { Database } from "../../../services/database.js";
import { migrations } from "../../../services/migrations.js";
import { createTestDatabase, type TestDatabase } from "../../support/database.js";
import { ALL_MODULES } from "../../../services/modules.js";
import { createUser } from "../../../services/organization/queries.js";
import { api, createTestServiceAccount } from "../../support/fixtures.js";
import { grpcClient } from "../../support/grpc.js";
import { WEBHOOK_URL } from "./endpoints.js";
import { RPC_SERVICES, type RpcEndpoints } from "./rpc-catalog.js";
import { startServeProcess, type ServeProcess } from "./serve-process.js";
import { seedOrg, type Org } from "./world.js";

/**
 * The workload credential (a service-account token, `aps_…`) with which the fuzzer calls an
 * internal service: an account bound to the seeded organization, holding the scopes the
 * service's methods need.
 */
export async function workloadTokenFor(db: Kysely<Database>, orgId: string, serviceTypeName: string): Promise<string> {
  const served = ALL_MODULES.flatMap((m) => m.services).find((s) => s.service.typeName === serviceTypeName);
  if (served?.policy.kind !== "internal") throw new Error(`${serviceTypeName} is not an internal service`);
  return createTestServiceAccount(db, {
    orgId,
    scopes: [...new Set(Object.values(served.policy.scopes))],
    name: `fuzz ${serviceTypeName}`,
  });
}

/** A session claimed by a runner in the setup: a valid (sessionId, leaseToken) pair. */
export interface Lease {
  sessionId: string;
  leaseToken: string;
}

/** Everything the generators draw real values from. */
export interface RpcWorld {
  org: Org;
  /**
   * Computers generated requests may change (UpdateComputer renames them, moves their host):
   * the computerId pool.
   */
  computers: { id: string; name: string }[];
  /** A computer no request changes, so looking it up by name can succeed all run long. */
  named: string;
  /** The host of a computer no request changes, so RegisterHost can succeed all run long. */
  hostId: string;
  /**
   * Leases per lease method (RenewLease, AppendMessages, FinishRun), so that FinishRun ending
   * its leases does not leave the others none.
   */
  leases: Record<"renew" | "append" | "finish", Lease[]>;
  /**
   * Sessions that only InterruptSession and DeleteSession are given, in a pool each: a delete
   * removes a session (with its messages and children) and an interrupt ends its lease, so on
   * the shared sessionId pool they would take the other methods' sessions and leases from them
   * mid-run. Interrupt's are running under a lease (an interrupt ends it); delete's are pending
   * with a message, and every other one has a child session (deleted with it).
   */
  disposable: Record<"interrupt" | "delete", string[]>;
  /**
   * What only the methods that remove or reset something are given, each its own: computers
   * for DeleteComputer, computers whose provisioning failed for RetryComputerProvisioning,
   * webhooks for DeleteWebhook, and users with a credit limit for DeleteUserCreditLimit. The
   * other methods keep theirs: the seeded computers, the kept webhook, the members' limits.
   */
  removable: { computers: string[]; failedComputers: string[]; webhooks: string[]; limitEmails: string[] };
  /** A webhook no request deletes, for ListWebhookDeliveries. */
  webhookId: string;
  /** Bearer token per internal service type name (undefined: none needed). */
  workloadTokens: Record<string, string | undefined>;
}

export interface RpcTarget extends RpcEndpoints {
  server: ServeProcess;
  database: TestDatabase<Database>;
  world: RpcWorld;
  close(): Promise<void>;
}

function metadataOf(token: string | undefined): Record<string, string> {
  return token ? { authorization: `Bearer ${token}` } : {};
}

/**
 * The removable pools (RpcWorld.removable): 12 computers, 8 that failed provisioning (e2b
 * computers, which the server's own worker fails at once as E2B is not configured), 8 webhooks
 * (with the kept one, 9 of the organization's 20: CreateWebhook has room too), and 6 users with
 * a credit limit.
 */
async function seedRemovable(
  db: Kysely<Database>,
  restUrl: string,
  org: Org,
  workers: boolean,
): Promise<RpcWorld["removable"]> {
  const owner = org.members.owner;
  const call = async (path: string, init: Parameters<typeof api>[3], want: number) => {
    const res = await api(restUrl, owner.key, path, init);
    if (res.status !== want) throw new Error(`${init?.method ?? "GET"} ${path}: ${res.status} ${res.text}`);
    return res.json;
  };
  const computer = async (provider: string) =>
    (
      await call(
        "/api/v0/computers",
        { method: "POST", body: { name: `fuzz-${randomUUID()}`, remoteUser: "dev", provider } },
        201,
      )
    ).id as string;
  const computers: string[] = [];
  for (let i = 0; i < 12; i++) computers.push(await computer("byom"));
  const failedComputers: string[] = [];
  for (let i = 0; i < 8; i++) failedComputers.push(await computer("e2b"));
  const webhooks: string[] = [];
  for (let i = 0; i < 8; i++)
    webhooks.push(
      (await call("/api/v0/webhooks", { method: "POST", body: { url: WEBHOOK_URL, events: ["message.created"] } }, 201))
        .id,
    );
  const limitEmails: string[] = [];
  for (let i = 0; i < 6; i++) {
    const email = `limited-${i}.${org.marker.toLowerCase()}@example.test`;
    await createUser(db, { orgId: org.orgId, email, role: "member", firstName: org.marker, lastName: `limited ${i}` });
    limitEmails.push(email);
  }
  const set = await call(
    "/api/v0/organization/usage/limits/users",
    { method: "PUT", body: { users: limitEmails.map((email) => ({ email, limit: 100 })) } },
    200,
  );
  if (set.updated.length !== limitEmails.length) throw new Error(`setting limits: ${JSON.stringify(set)}`);
  // The worker claims the e2b computers and fails their first step (E2B is not configured).
  // Without workers (fuzz-rpc-memory), the setup fails them as the worker would.
  if (!workers) {
    await db
      .updateTable("computer_provisioning_steps")
      .set({
        status: "failed",
        error: "E2B is not configured",
        attempts: 1,
        started_at: new Date(),
        completed_at: new Date(),
      })
      .where("computer_id", "in", failedComputers)
      .where("position", "=", 0)
      .execute();
    await db.updateTable("computers").set({ status: "error" }).where("id", "in", failedComputers).execute();
  }
  for (let i = 0; ; i++) {
    const failed = await db
      .selectFrom("computers")
      .select("id")
      .where("id", "in", failedComputers)
      .where("status", "=", "error")
      .execute();
    if (failed.length === failedComputers.length) break;
    if (i > 600) throw new Error(`${failed.length} of ${failedComputers.length} computers failed provisioning`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { computers, failedComputers, webhooks, limitEmails };
}

export async function startRpcTarget(env: Record<string, string> = {}): Promise<RpcTarget> {
  const database = await createTestDatabase<Database>(migrations);
  let server: ServeProcess | undefined;
  try {
    server = await startServeProcess({
      DATABASE_URL: database.url,
      REDIS_URL: process.env.TEST_REDIS_URL ?? "",
      ...env,
    });
    const endpoints: RpcEndpoints = { grpcUrl: server.grpcUrl, internalGrpcUrl: server.internalGrpcUrl };
    const org = await seedOrg(database.db, server.restUrl!, server.internalGrpcUrl, "R");
    const workloadTokens: Record<string, string | undefined> = {};
    for (const { service, access } of RPC_SERVICES)
      if (access === "internal")
        workloadTokens[service.typeName] = await workloadTokenFor(database.db, org.orgId, service.typeName);

    const owner = org.members.owner;
    const computer = async (body: Record<string, unknown>) => {
      const created = await api(server!.restUrl!, owner.key, "/api/v0/computers", {
        method: "POST",
        body: { remoteUser: "dev", ...body },
      });
      if (created.status !== 201) throw new Error(`creating a computer failed: ${created.status} ${created.text}`);
      return { id: created.json.id as string, name: created.json.name as string };
    };
    const target = await computer({ name: "fuzz-update-target", hostId: randomUUID() });
    const named = await computer({ name: "fuzz-named" });
    const hostId = randomUUID();
    await computer({ name: "fuzz-hosted", hostId });

    // Sessions with a waiting user message, claimed under long leases: the lease methods get
    // pairs that work (until a generated FinishRun ends one).
    const runner = grpcClient(SessionRunnerService, server.internalGrpcUrl);
    const token = workloadTokens[SessionRunnerService.typeName];
    const leases: Lease[] = [];
    const disposable: RpcWorld["disposable"] = { interrupt: [], delete: [] };
    try {
      // The four sessions seedOrg made wait too: claim those first.
      for (let i = 0; i < 4 + 18; i++) {
        if (i >= 4) {
          const s = await runner.call(
            SessionRunnerService.method.createSession,
            { orgId: org.orgId, userId: owner.userId, title: `leased ${i}` },
            metadataOf(token),
          );
          const posted = await api(server.restUrl!, owner.key, `/api/v0/sessions/${s.sessionId}/messages`, {
            method: "POST",
            body: { text: `work ${i}` },
          });
          if (posted.status !== 200)
            throw new Error(`posting to a leased session failed: ${posted.status} ${posted.text}`);
        }
        const claim = await runner.call(
          SessionRunnerService.method.claimSession,
          { runnerId: "fuzz-setup", leaseSeconds: 3600, orgId: org.orgId },
          metadataOf(token),
        );
        if (claim.session) leases.push({ sessionId: claim.session.sessionId, leaseToken: claim.leaseToken });
      }
      if (leases.length < 18) throw new Error(`the setup claimed ${leases.length} sessions, not 18`);

      // Made after the claims above, so that those took the leased pool's sessions, not these;
      // each interrupt target is claimed as soon as it waits, then the only session that does
      // (a session still waiting from the loop above is claimed first, and left alone).
      const claimNext = () =>
        runner.call(
          SessionRunnerService.method.claimSession,
          { runnerId: "fuzz-setup", leaseSeconds: 3600, orgId: org.orgId },
          metadataOf(token),
        );
      for (let i = 0; i < 50 && (await claimNext()).session; i++);
      const pending = async (title: string, parentSessionId?: string) => {
        const s = await runner.call(
          SessionRunnerService.method.createSession,
          { orgId: org.orgId, userId: owner.userId, title, ...(parentSessionId ? { parentSessionId } : {}) },
          metadataOf(token),
        );
        const posted = await api(server!.restUrl!, owner.key, `/api/v0/sessions/${s.sessionId}/messages`, {
          method: "POST",
          body: { text: title },
        });
        if (posted.status !== 200) throw new Error(`posting to ${title} failed: ${posted.status} ${posted.text}`);
        return s.sessionId;
      };
      for (let i = 0; i < 6; i++) {
        const id = await pending(`to interrupt ${i}`);
        const claim = await claimNext();
        if (claim.session?.sessionId !== id) throw new Error(`claimed ${claim.session?.sessionId}, not ${id}`);
        disposable.interrupt.push(id);
      }
      for (let i = 0; i < 24; i++) {
        const id = await pending(`to delete ${i}`);
        if (i % 2 === 0) await pending(`child of to delete ${i}`, id);
        disposable.delete.push(id);
      }
    } finally {
      runner.close();
    }

    const removable = await seedRemovable(database.db, server.restUrl!, org, env.WORKERS !== "false");
    const kept = await api(server.restUrl!, owner.key, "/api/v0/webhooks", {
      method: "POST",
      body: { url: WEBHOOK_URL, events: ["message.created"], description: "kept" },
    });
    if (kept.status !== 201) throw new Error(`creating a webhook failed: ${kept.status} ${kept.text}`);

    const world: RpcWorld = {
      org,
      removable,
      webhookId: kept.json.id,
      computers: [org.computer, target],
      named: named.name,
      hostId,
      leases: { renew: leases.slice(-18, -12), append: leases.slice(-12, -6), finish: leases.slice(-6) },
      disposable,
      workloadTokens,
    };
    const started = server;
    return {
      ...endpoints,
      server: started,
      database,
      world,
      async close() {
        await started.terminate();
        await database.drop();
      },
    };
  } catch (e) {
    await server?.terminate();
    await database.drop();
    throw e;
  }
}
