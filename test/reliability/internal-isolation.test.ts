// The isolation matrix of the internal gRPC services: every internal RPC, called over gRPC
// (@grpc/grpc-js) on INTERNAL_GRPC_PORT by each kind of caller that must be refused — no
// credential, a made-up token, a revoked service account, a user's API key, another
// organization's service account, accounts without the method's scope (bound and unbound) —
// aimed at organization A's data. Each is refused with the right code, no answer carries A's
// data, and nothing at all is written (every table's contents are digested before and after).
// Then the right account makes every call succeed (the positive control), and the listeners
// serve only their own services.
import { randomUUID } from "node:crypto";
import { create, fromJson, type DescMethodUnary, type DescService } from "@bufbuild/protobuf";
import { sql, type Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TelemetryService } from "../../gen/agentplane/analytics/v1/analytics_pb.js";
import { HostService } from "../../gen/agentplane/computers/v1alpha1/computers_pb.js";
import { CreditLimitService } from "../../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { ReadinessReportSchema, ReportSubmissionService } from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import { SessionRunnerService, SessionService } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import type { Database } from "../../services/database.js";
import { SCOPES } from "../../services/modules.js";
import { createServiceAccount, revokeServiceAccount } from "../../services/organization/service-accounts.js";
import { api, bearer, createTestServiceAccount } from "../support/fixtures.js";
import { grpcClient } from "../support/grpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { recordFigures } from "./support/figures.js";
import { leakedFrom, seedOrg, type Org } from "./support/world.js";

const UNAUTHENTICATED = 16;
const PERMISSION_DENIED = 7;
const NOT_FOUND = 5;
const UNIMPLEMENTED = 12;

type Caller = "none" | "madeUp" | "revoked" | "userKey" | "otherOrg" | "boundWithoutScope" | "unboundWithoutScope";
const CALLERS: Caller[] = [
  "none",
  "madeUp",
  "revoked",
  "userKey",
  "otherOrg",
  "boundWithoutScope",
  "unboundWithoutScope",
];

interface Row {
  service: DescService;
  method: DescMethodUnary;
  scope: string;
  /** The request, aimed at organization A. */
  request(): Record<string, unknown>;
  /** Whether the request reaches A's data by an ID of its own (a session, a host) rather than by naming A. */
  byId: boolean;
}

/** Every table's contents, digested: equal digests mean nothing was written. */
async function tableDigests(db: Kysely<Database>): Promise<Record<string, string>> {
  const tables = await sql<{ name: string }>`
    select table_name as name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE' and table_name not like 'kysely_%'
    order by table_name`.execute(db);
  const out: Record<string, string> = {};
  for (const { name } of tables.rows) {
    const r = await sql<{
      d: string;
    }>`select md5(coalesce(string_agg(t::text, '|' order by t::text), '')) as d from ${sql.table(name)} t`.execute(db);
    out[name] = r.rows[0]!.d;
  }
  return out;
}

describe("internal gRPC isolation matrix", () => {
  let server: TestServer;
  let a: Org;
  let b: Org;
  const tokens = {} as Record<Caller, string | undefined>;
  /** A-bound accounts each lacking one scope (so the scope a method needs is missing). */
  const boundWithout = new Map<string, string>();
  const unboundWithout = new Map<string, string>();
  let aAll: string;
  let hostId: string;
  let lease: { sessionId: string; leaseToken: string };
  const rows: Row[] = [];
  const figures = { calls: 0, refused: 0, leaksChecked: 0 };

  beforeAll(async () => {
    server = await startTestServer();
    const db = server.platform.db;
    a = await seedOrg(db, server.restUrl, server.internalGrpcUrl, "A");
    b = await seedOrg(db, server.restUrl, server.internalGrpcUrl, "B");
    aAll = await createTestServiceAccount(db, { orgId: a.orgId });
    tokens.none = undefined;
    tokens.madeUp = `aps_${randomUUID().replaceAll("-", "")}${randomUUID().replaceAll("-", "")}`;
    const revoked = await createServiceAccount(db, { name: "revoked", scopes: [...SCOPES], orgId: a.orgId });
    await revokeServiceAccount(db, revoked.account.id);
    tokens.revoked = revoked.token;
    tokens.userKey = a.members.owner.key;
    tokens.otherOrg = await createTestServiceAccount(db, { orgId: b.orgId });
    for (const scope of SCOPES) {
      const rest = SCOPES.filter((s) => s !== scope);
      boundWithout.set(scope, await createTestServiceAccount(db, { orgId: a.orgId, scopes: rest }));
      unboundWithout.set(scope, await createTestServiceAccount(db, { scopes: rest }));
    }

    hostId = randomUUID();
    const computer = await api(server.restUrl, a.members.owner.key, "/api/v0/computers", {
      method: "POST",
      body: { name: `${a.marker}-host`, remoteUser: "dev", hostId },
    });
    expect(computer.status).toBe(201);
    // A run of A's session held by A's runner: the lease methods are called with its real token.
    const runner = grpcClient(SessionRunnerService, server.internalGrpcUrl, bearer(aAll));
    try {
      const claimed = await runner.call(SessionRunnerService.method.claimSession, {
        runnerId: "isolation",
        orgId: a.orgId,
      });
      expect(claimed.orgId).toBe(a.orgId);
      lease = { sessionId: claimed.session!.sessionId, leaseToken: claimed.leaseToken! };
    } finally {
      runner.close();
    }

    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const member = a.members.member;
    rows.push(
      {
        service: TelemetryService,
        method: TelemetryService.method.ingest,
        scope: "analytics.ingest",
        byId: false,
        // A member's event: the owner's API key may not ingest it either.
        request: () => ({
          events: [
            {
              type: "hook",
              time: new Date(Date.now() - 60_000).toISOString(),
              orgId: a.orgId,
              userId: member.userId,
              client: "terminal-ui",
              eventId: randomUUID(),
              event: "Stop",
              matcher: "",
              command: "isolation",
            },
          ],
        }),
      },
      {
        service: TelemetryService,
        method: TelemetryService.method.rollup,
        scope: "analytics.rollup",
        byId: false,
        request: () => ({ fromDate: yesterday, toDate: yesterday, orgId: a.orgId }),
      },
      {
        service: ReportSubmissionService,
        method: ReportSubmissionService.method.submitReport,
        scope: "readiness.submit",
        byId: false,
        request: () => ({
          orgId: a.orgId,
          report: fromJson(ReadinessReportSchema, {
            reportId: randomUUID(),
            createdAt: Date.now() - 1000,
            repoUrl: `https://github.com/${a.marker.toLowerCase()}/other`,
            report: { readme: { numerator: 1, denominator: 1, rationale: "r" } },
          }),
        }),
      },
      {
        service: ReportSubmissionService,
        method: ReportSubmissionService.method.listRepositories,
        scope: "readiness.submit",
        byId: false,
        request: () => ({ orgId: a.orgId }),
      },
      {
        service: SessionRunnerService,
        method: SessionRunnerService.method.createSession,
        scope: "sessions.runner",
        byId: false,
        request: () => ({ orgId: a.orgId, userId: a.members.owner.userId, title: "isolation" }),
      },
      {
        service: SessionRunnerService,
        method: SessionRunnerService.method.claimSession,
        scope: "sessions.runner",
        byId: false,
        request: () => ({ runnerId: "intruder", orgId: a.orgId }),
      },
      {
        service: SessionRunnerService,
        method: SessionRunnerService.method.renewLease,
        scope: "sessions.runner",
        byId: true,
        request: () => ({ ...lease, leaseSeconds: 60 }),
      },
      {
        service: SessionRunnerService,
        method: SessionRunnerService.method.appendMessages,
        scope: "sessions.runner",
        byId: true,
        request: () => ({
          ...lease,
          messages: [{ role: "assistant", text: "isolation reply" }],
          modelUsage: [
            { modelId: "m", modelTier: "standard", usage: { inputTokens: 100_000_000, outputTokens: 100_000_000 } },
          ],
        }),
      },
      {
        service: SessionRunnerService,
        method: SessionRunnerService.method.finishRun,
        scope: "sessions.runner",
        byId: true,
        request: () => ({ ...lease }),
      },
      {
        service: HostService,
        method: HostService.method.registerHost,
        scope: "computers.host",
        byId: true,
        request: () => ({
          hostId,
          hostname: "intruder.example",
          relayClientUrl: "wss://relay.intruder.example/c",
          relayAgentUrl: "wss://relay.intruder.example/a",
        }),
      },
      {
        service: CreditLimitService,
        method: CreditLimitService.method.getCreditBalance,
        scope: "organization.credits",
        byId: false,
        request: () => ({ orgId: a.orgId, userId: a.members.owner.userId }),
      },
    );
  }, 120_000);

  afterAll(async () => {
    recordFigures("internal isolation", figures);
    await server?.close();
  });

  it("covers every method of every internal service", () => {
    const internalServices = [
      TelemetryService,
      ReportSubmissionService,
      SessionRunnerService,
      HostService,
      CreditLimitService,
    ];
    const all = internalServices.flatMap((s) => s.methods.map((m) => `${s.typeName}/${m.name}`)).sort();
    expect(rows.map((r) => `${r.service.typeName}/${r.method.name}`).sort()).toEqual(all);
  });

  it("refuses every caller but the right one, with no data in the answer and nothing written", async () => {
    const db = server.platform.db;
    const before = await tableDigests(db);
    const wrong: string[] = [];
    for (const row of rows) {
      for (const caller of CALLERS) {
        const token =
          caller === "boundWithoutScope"
            ? boundWithout.get(row.scope)
            : caller === "unboundWithoutScope"
              ? unboundWithout.get(row.scope)
              : tokens[caller];
        const expected =
          caller === "none" || caller === "madeUp" || caller === "revoked"
            ? UNAUTHENTICATED
            : caller === "otherOrg" && row.byId
              ? NOT_FOUND
              : PERMISSION_DENIED;
        const client = grpcClient(row.service, server.internalGrpcUrl, token === undefined ? {} : bearer(token));
        figures.calls++;
        try {
          const answer = await client.call(row.method, row.request());
          wrong.push(`${row.method.name} as ${caller}: answered ${JSON.stringify(answer).slice(0, 200)}`);
        } catch (err) {
          const e = err as { code?: number; details?: string };
          figures.refused++;
          if (e.code !== expected)
            wrong.push(`${row.method.name} as ${caller}: code ${e.code} (${e.details}), expected ${expected}`);
          figures.leaksChecked++;
          // The refusal names what is wrong, never A's data (B's account must learn nothing of A).
          const leaked = leakedFrom(a, e.details ?? "").filter((s) => !JSON.stringify(row.request()).includes(s));
          if (leaked.length > 0) wrong.push(`${row.method.name} as ${caller}: the error carries ${leaked.join(", ")}`);
        } finally {
          client.close();
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(await tableDigests(db)).toEqual(before);
  }, 120_000);

  it("lets another organization's runner claim only its own sessions, whatever it asks for", async () => {
    const runner = grpcClient(SessionRunnerService, server.internalGrpcUrl, bearer(tokens.otherOrg!));
    try {
      for (let i = 0; i < 5; i++) {
        const claimed = await runner.call(SessionRunnerService.method.claimSession, {
          runnerId: `b-${i}`,
          leaseSeconds: 5,
        });
        if (!claimed.session) break;
        expect(claimed.orgId).toBe(b.orgId);
        expect(leakedFrom(a, JSON.stringify(claimed))).toEqual([]);
      }
    } finally {
      runner.close();
    }
  });

  it("takes a user's API key for ingest of its own events only", async () => {
    const owner = a.members.owner;
    const client = grpcClient(TelemetryService, server.internalGrpcUrl, bearer(owner.key));
    const event = (orgId: string, userId: string) => ({
      type: "hook",
      time: new Date(Date.now() - 60_000).toISOString(),
      orgId,
      userId,
      client: "terminal-ui",
      eventId: randomUUID(),
      event: "Stop",
      matcher: "",
      command: "isolation",
    });
    try {
      const ok = await client.call(TelemetryService.method.ingest, { events: [event(a.orgId, owner.userId)] });
      expect(ok.accepted).toBe(1);
      // One foreign event refuses the whole call: the own event beside it is not stored either.
      for (const foreign of [event(b.orgId, b.members.owner.userId), event(a.orgId, a.members.member.userId)]) {
        const before = await server.platform.db
          .selectFrom("analytics_events")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .executeTakeFirstOrThrow();
        await expect(
          client.call(TelemetryService.method.ingest, { events: [event(a.orgId, owner.userId), foreign] }),
        ).rejects.toMatchObject({ code: PERMISSION_DENIED });
        const after = await server.platform.db
          .selectFrom("analytics_events")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .executeTakeFirstOrThrow();
        expect(after.n).toBe(before.n);
      }
    } finally {
      client.close();
    }
  });

  it("serves every internal RPC to the right account (the positive control)", async () => {
    const answers: string[] = [];
    for (const row of rows) {
      const client = grpcClient(row.service, server.internalGrpcUrl, bearer(aAll));
      try {
        const answer = await client.call(row.method, row.request());
        answers.push(row.method.name);
        expect(leakedFrom(b, JSON.stringify(answer))).toEqual([]);
      } finally {
        client.close();
      }
    }
    expect(answers).toEqual(rows.map((r) => r.method.name));
    // An unbound account acts for the organization the request names.
    const unbound = grpcClient(
      CreditLimitService,
      server.internalGrpcUrl,
      bearer(await createTestServiceAccount(server.platform.db, { scopes: ["organization.credits"] })),
    );
    try {
      const balance = await unbound.call(CreditLimitService.method.getCreditBalance, {
        orgId: b.orgId,
        userId: b.members.owner.userId,
      });
      expect(balance.usedMonthToDate).toBeGreaterThanOrEqual(0);
      await expect(
        unbound.call(CreditLimitService.method.getCreditBalance, { userId: b.members.owner.userId }),
      ).rejects.toMatchObject({ code: 3 });
    } finally {
      unbound.close();
    }
  });

  it("serves the internal services on the internal listener only, and the public ones on the public listener only", async () => {
    const onPublic = grpcClient(CreditLimitService, server.grpcUrl, bearer(aAll));
    const onInternal = grpcClient(SessionService, server.internalGrpcUrl, bearer(a.members.owner.key));
    try {
      await expect(
        onPublic.call(CreditLimitService.method.getCreditBalance, { orgId: a.orgId, userId: a.members.owner.userId }),
      ).rejects.toMatchObject({ code: UNIMPLEMENTED });
      await expect(onInternal.call(SessionService.method.listSessions, {})).rejects.toMatchObject({
        code: UNIMPLEMENTED,
      });
    } finally {
      onPublic.close();
      onInternal.close();
    }
  });

  it("refuses service-account tokens on the public services", async () => {
    const client = grpcClient(SessionService, server.grpcUrl, bearer(aAll));
    try {
      await expect(
        client.call(SessionService.method.listSessions, create(SessionService.method.listSessions.input, {})),
      ).rejects.toMatchObject({ code: UNAUTHENTICATED });
    } finally {
      client.close();
    }
  });
});
