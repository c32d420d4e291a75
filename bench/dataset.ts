// The benchmark's data set, written through the repository functions the service itself uses:
// an enterprise organization with a very high rate limit (so the limiter is exercised on every
// request but never refuses one), an owner and its API key, then every module's demo writer
// (users of all roles, their coding sessions with conversations and subagents, 90 days of
// telemetry rolled up into daily analytics) — the same data `agentplane demo` writes.
import { sql, type Kysely } from "kysely";
import type { Database } from "../services/database.js";
import { writeDemoData } from "../services/demo.js";
import {
  createApiKey,
  createOrganization,
  createUser,
  setOrganizationRateLimit,
} from "../services/organization/queries.js";

/** High enough that 64 connections at full speed for minutes never reach it. */
export const BENCH_RATE_LIMIT_PER_MINUTE = 1_000_000_000;

export interface Dataset {
  orgId: string;
  ownerId: string;
  /** The owner's API key: owners see every session of the organization. */
  apiKey: string;
  /** Top-level sessions, newest first: the ids the GET and POST cases rotate through. */
  sessionIds: string[];
  sessions: number;
  messages: number;
  users: number;
  /** Raw telemetry events behind the daily analytics (undefined if they could not be counted). */
  events: number | undefined;
}

export interface DatasetOptions {
  users: number;
  days: number;
}

export async function writeDataset(db: Kysely<Database>, options: DatasetOptions): Promise<Dataset> {
  const org = await createOrganization(db, {
    name: `Benchmark Organization ${new Date().toISOString()}`,
    plan: "enterprise",
  });
  await setOrganizationRateLimit(db, org.id, BENCH_RATE_LIMIT_PER_MINUTE);
  const owner = await createUser(db, {
    orgId: org.id,
    email: "owner@bench.agentplane.dev",
    role: "owner",
    firstName: "Bench",
    lastName: "Owner",
  });
  const { key } = await createApiKey(db, org.id, owner.id);
  await writeDemoData(db, org.id, { days: options.days, users: options.users });

  const roots = await db
    .selectFrom("sessions")
    .select("id")
    .where("org_id", "=", org.id)
    .where("parent_session_id", "is", null)
    .orderBy("updated_at", "desc")
    .execute();
  const count = async (table: "sessions" | "messages" | "users") => {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("org_id", "=", org.id)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  };
  // The analytics area owns its schema; the count is informational only.
  const events = await sql<{ n: number }>`select count(*)::int as n from analytics_events where org_id = ${org.id}`
    .execute(db)
    .then(
      (r) => r.rows[0]?.n,
      () => undefined,
    );
  return {
    orgId: org.id,
    ownerId: owner.id,
    apiKey: key,
    sessionIds: roots.map((r) => r.id),
    sessions: await count("sessions"),
    messages: await count("messages"),
    users: await count("users"),
    events,
  };
}
