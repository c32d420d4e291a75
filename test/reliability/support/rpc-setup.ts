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
import { api } from "../../support/fixtures.js";
import { grpcClient } from "../../support/grpc.js";
import { RPC_SERVICES, type RpcEndpoints } from "./rpc-catalog.js";
import { startServeProcess, type ServeProcess } from "./serve-process.js";
import { seedOrg, type Org } from "./world.js";

/**
 * The workload credential (a service-account token, `aps_…`) with which the fuzzer calls an
 * internal service. Internal services take no credential yet, so this returns undefined and
 * those calls carry no Authorization header. When service-account tokens land, create one here
 * with the function that comes with them (for the organization `orgId`), and the fuzzer sends
 * it as `Authorization: Bearer <token>` to internal services, and sometimes none or a bad one,
 * as it does API keys for the public services.
 */
export async function workloadTokenFor(db: Kysely<Database>, orgId: string, serviceTypeName: string): Promise<string | undefined> {
  void db;
  void orgId;
  void serviceTypeName;
  return undefined;
}

/** A session claimed by a runner in the setup: a valid (sessionId, leaseToken) pair. */
export interface Lease {
  sessionId: string;
  leaseToken: string;
}

/** Everything the generators draw real values from. */
export interface RpcWorld {
  org: Org;
  /** Computers by name (the seeded one, one with a host). */
  computers: { id: string; name: string; hostId?: string }[];
  leases: Lease[];
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

export async function startRpcTarget(env: Record<string, string> = {}): Promise<RpcTarget> {
  const database = await createTestDatabase<Database>(migrations);
  let server: ServeProcess | undefined;
  try {
    server = await startServeProcess({ DATABASE_URL: database.url, REDIS_URL: process.env.TEST_REDIS_URL ?? "", ...env });
    const endpoints: RpcEndpoints = { grpcUrl: server.grpcUrl };
    const org = await seedOrg(database.db, server.restUrl!, server.grpcUrl, "R");
    const workloadTokens: Record<string, string | undefined> = {};
    for (const { service, access } of RPC_SERVICES) if (access === "internal") workloadTokens[service.typeName] = await workloadTokenFor(database.db, org.orgId, service.typeName);

    const owner = org.members.owner;
    const hostId = randomUUID();
    const hosted = await api(server.restUrl!, owner.key, "/api/v0/computers", { method: "POST", body: { name: "fuzz-hosted", remoteUser: "dev", hostId } });
    if (hosted.status !== 201) throw new Error(`creating the hosted computer failed: ${hosted.status} ${hosted.text}`);

    // Sessions with a waiting user message, claimed under long leases: the lease methods get
    // pairs that work (until a generated FinishRun ends one).
    const runner = grpcClient(SessionRunnerService, server.grpcUrl);
    const token = workloadTokens[SessionRunnerService.typeName];
    const leases: Lease[] = [];
    try {
      for (let i = 0; i < 6; i++) {
        const s = await runner.call(SessionRunnerService.method.createSession, { orgId: org.orgId, userId: owner.userId, title: `leased ${i}` }, metadataOf(token));
        const posted = await api(server.restUrl!, owner.key, `/api/v0/sessions/${s.sessionId}/messages`, { method: "POST", body: { text: `work ${i}` } });
        if (posted.status !== 200) throw new Error(`posting to a leased session failed: ${posted.status} ${posted.text}`);
      }
      for (let i = 0; i < 6; i++) {
        const claim = await runner.call(SessionRunnerService.method.claimSession, { runnerId: "fuzz-setup", leaseSeconds: 3600, orgId: org.orgId }, metadataOf(token));
        if (claim.session) leases.push({ sessionId: claim.session.sessionId, leaseToken: claim.leaseToken });
      }
    } finally {
      runner.close();
    }
    if (leases.length === 0) throw new Error("the setup claimed no session");

    const world: RpcWorld = {
      org,
      computers: [org.computer, { id: hosted.json.id, name: hosted.json.name, hostId }],
      leases,
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
