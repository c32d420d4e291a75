// Two organizations with every role, realistic data in every area (the modules' own demo
// writers) and resources each carrying a distinctive marker string, so a test can grep any
// answer for the other organization's data: its marker strings and every row ID it owns.
import { randomUUID } from "node:crypto";
import { fromJson } from "@bufbuild/protobuf";
import { sql, type Kysely } from "kysely";
import { ReadinessReportSchema } from "../../../gen/agentplane/readiness/v1/readiness_pb.js";
import { SessionRunnerService } from "../../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import type { Database } from "../../../services/database.js";
import { writeDemoData } from "../../../services/demo.js";
import {
  createApiKey,
  createOrganization,
  createUser,
  setOrganizationRateLimit,
} from "../../../services/organization/queries.js";
import { submitReport } from "../../../services/readiness/submit.js";
import type { Role } from "../../../services/platform/context.js";
import { api, bearer, createTestServiceAccount } from "../../support/fixtures.js";
import { grpcClient } from "../../support/grpc.js";

export interface Member {
  userId: string;
  email: string;
  role: Role;
  key: string;
  keyId: string;
}

export interface Org {
  label: string;
  orgId: string;
  /** A string that appears only in this organization's data. */
  marker: string;
  members: Record<Role, Member>;
  /** Session of each role's user (guests cannot post, but own sessions created for them). */
  sessions: Record<Role, string>;
  /** A message in each of those sessions. */
  messages: Record<Role, string>;
  computer: { id: string; name: string };
  report: { id: string; repoId: string };
  /** Every ID of a row that belongs to this organization, plus the markers: none may leak. */
  secrets: string[];
}

/** Requests per minute for test organizations: fuzzing must not meet the rate limiter. */
export const UNLIMITED = 10_000_000;

const ROLES: Role[] = ["owner", "manager", "member", "guest"];

export async function seedOrg(
  db: Kysely<Database>,
  restUrl: string,
  internalGrpcUrl: string,
  label: string,
  options: { demo?: boolean } = {},
): Promise<Org> {
  const marker = `MARK${label}${randomUUID().slice(0, 8)}`;
  const org = await createOrganization(db, { name: `Reliability ${marker}` });
  await setOrganizationRateLimit(db, org.id, UNLIMITED);
  const members = {} as Record<Role, Member>;
  for (const role of ROLES) {
    const email = `${role}.${marker.toLowerCase()}@example.test`;
    const user = await createUser(db, { orgId: org.id, email, role, firstName: marker, lastName: role });
    const { id, key } = await createApiKey(db, org.id, user.id);
    members[role] = { userId: user.id, email, role, key, keyId: id };
  }
  if (options.demo !== false) await writeDemoData(db, org.id, { days: 3, users: 2 });

  const runner = grpcClient(
    SessionRunnerService,
    internalGrpcUrl,
    bearer(await createTestServiceAccount(db, { orgId: org.id, scopes: ["sessions.runner"] })),
  );
  const sessions = {} as Record<Role, string>;
  const messages = {} as Record<Role, string>;
  try {
    for (const role of ROLES) {
      const s = await runner.call(SessionRunnerService.method.createSession, {
        orgId: org.id,
        userId: members[role].userId,
        title: `${marker} ${role} session`,
      });
      sessions[role] = s.sessionId;
      // Guests cannot post: the owner (who may write to any session of the organization) puts
      // the message into the guest's session.
      const poster = role === "guest" ? members.owner : members[role];
      const posted = await api(restUrl, poster.key, `/api/v0/sessions/${s.sessionId}/messages`, {
        method: "POST",
        body: { text: `${marker} says hello from ${role}` },
      });
      if (posted.status !== 200) throw new Error(`seeding a message failed: ${posted.status} ${posted.text}`);
      messages[role] = posted.json.messageId;
    }
  } finally {
    runner.close();
  }

  const created = await api(restUrl, members.owner.key, "/api/v0/computers", {
    method: "POST",
    body: { name: `${marker}-box`, remoteUser: "dev" },
  });
  if (created.status !== 201) throw new Error(`seeding a computer failed: ${created.status} ${created.text}`);
  const reportId = randomUUID();
  const submitted = await submitReport(
    db,
    org.id,
    fromJson(ReadinessReportSchema, {
      reportId,
      createdAt: Date.now() - 3_600_000,
      repoUrl: `https://github.com/${marker.toLowerCase()}/repo`,
      apps: { "apps/web": { description: `${marker} web` } },
      report: { readme: { numerator: 1, denominator: 1, rationale: `${marker} rationale` } },
    }),
  );

  const result: Org = {
    label,
    orgId: org.id,
    marker,
    members,
    sessions,
    messages,
    computer: { id: created.json.id, name: created.json.name },
    report: { id: submitted.reportId, repoId: submitted.repoId },
    secrets: [],
  };
  result.secrets = await ownedIds(db, org.id);
  result.secrets.push(marker, marker.toLowerCase());
  return result;
}

/** Every `id` (and other *_id text) of every row whose org_id is this organization. */
export async function ownedIds(db: Kysely<Database>, orgId: string): Promise<string[]> {
  const tables = await sql<{ table_name: string; column_name: string }>`
    select c.table_name, c.column_name
    from information_schema.columns c
    join information_schema.columns o on o.table_schema = c.table_schema and o.table_name = c.table_name and o.column_name = 'org_id'
    where c.table_schema = current_schema() and c.column_name in ('id', 'session_id', 'user_id', 'report_id', 'repository_id', 'computer_id')
      and c.data_type in ('text', 'uuid', 'character varying')`.execute(db);
  const ids = new Set<string>([orgId]);
  for (const { table_name, column_name } of tables.rows) {
    const rows = await sql<{
      v: string | null;
    }>`select distinct ${sql.ref(column_name)}::text as v from ${sql.table(table_name)} where org_id::text = ${orgId}`.execute(
      db,
    );
    for (const r of rows.rows) if (r.v && r.v.length >= 8) ids.add(r.v);
  }
  return [...ids];
}

/** The other organization's IDs or markers found in a text (empty when it leaks nothing). */
export function leakedFrom(other: Org, text: string): string[] {
  return other.secrets.filter((s) => text.includes(s));
}
