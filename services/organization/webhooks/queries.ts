// The webhook tables' queries (migration 0018): endpoints by organization, the outbox of
// deliveries. Deliveries are inserted by triggers, never here; the dispatcher claims due ones,
// and records each attempt.
import { sql, type Kysely, type Selectable } from "kysely";
import type { Database, Executor } from "../../database.js";
import type { WebhookDeliveriesTable, WebhookEndpointsTable, WebhookEventType } from "../tables.js";

export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;

/** Where a newest-first page continues: the last row's creation time and ID. */
export interface NewestFirstPosition {
  createdAt: string;
  id: string;
}

export interface NewEndpoint {
  id: string;
  orgId: string;
  url: string;
  events: WebhookEventType[];
  description: string;
  secret: string;
}

/** Serializes the organization's webhook inserts (with hashtext(org_id)); see insertEndpoint. */
const ENDPOINTS_LOCK = 727_006_003;

/**
 * Inserts the endpoint unless the organization has `max` already. Returns undefined when it had.
 * The count and the insert run under a transaction lock per organization: in one statement
 * alone, concurrent creates each count the rows committed before them and all insert (12 at
 * once on 18 endpoints made 29).
 */
export async function insertEndpoint(
  db: Kysely<Database>,
  endpoint: NewEndpoint,
  max: number,
): Promise<WebhookEndpointRow | undefined> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${ENDPOINTS_LOCK}, hashtext(${endpoint.orgId}))`.execute(trx);
    const { rows } = await sql<WebhookEndpointRow>`
      insert into webhook_endpoints (id, org_id, url, events, description, secret)
      select ${endpoint.id}, ${endpoint.orgId}, ${endpoint.url}, ${endpoint.events}::text[], ${endpoint.description}, ${endpoint.secret}
      where (select count(*) from webhook_endpoints where org_id = ${endpoint.orgId}) < ${max}
      returning *`.execute(trx);
    return rows[0];
  });
}

export async function findEndpoint(db: Executor, orgId: string, id: string): Promise<WebhookEndpointRow | undefined> {
  return db
    .selectFrom("webhook_endpoints")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
}

/** Deletes the endpoint (and, cascading, its deliveries); false when the organization has none by that ID. */
export async function deleteEndpoint(db: Executor, orgId: string, id: string): Promise<boolean> {
  const res = await db
    .deleteFrom("webhook_endpoints")
    .where("org_id", "=", orgId)
    .where("id", "=", id)
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

const before = (after: NewestFirstPosition) =>
  sql<boolean>`(created_at, id) < (${new Date(after.createdAt)}::timestamptz, ${after.id})`;

export async function listEndpointsPage(
  db: Executor,
  orgId: string,
  limit: number,
  after?: NewestFirstPosition,
): Promise<WebhookEndpointRow[]> {
  let q = db.selectFrom("webhook_endpoints").selectAll().where("org_id", "=", orgId);
  if (after) q = q.where(before(after));
  return q.orderBy("created_at", "desc").orderBy("id", "desc").limit(limit).execute();
}

export async function listDeliveriesPage(
  db: Executor,
  orgId: string,
  endpointId: string,
  limit: number,
  after?: NewestFirstPosition,
): Promise<WebhookDeliveryRow[]> {
  let q = db
    .selectFrom("webhook_deliveries")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("endpoint_id", "=", endpointId);
  if (after) q = q.where(before(after));
  return q.orderBy("created_at", "desc").orderBy("id", "desc").limit(limit).execute();
}

/** A due delivery with what sending it needs. */
export type ClaimedDelivery = Pick<WebhookDeliveryRow, "id" | "org_id" | "attempts"> & {
  url: string;
  secret: string;
  /** The payload exactly as stored: the body that is signed and sent. */
  body: string;
};

/**
 * Claims up to `limit` due deliveries for `leaseMs`: their next attempt moves past the lease, so
 * no other dispatcher takes them meanwhile (SKIP LOCKED: claimers never wait for each other),
 * and their attempt count goes up. A dispatcher that dies mid-send leaves them to be claimed
 * again when the lease ends: at least once.
 */
export async function claimDueDeliveries(db: Executor, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
  const { rows } = await sql<ClaimedDelivery>`
    with due as (
      select id from webhook_deliveries
      where status = 'pending' and next_attempt_at <= clock_timestamp()
      order by next_attempt_at
      limit ${limit}
      for update skip locked
    )
    update webhook_deliveries d
    set attempts = d.attempts + 1,
        next_attempt_at = clock_timestamp() + make_interval(secs => ${leaseMs / 1000}::double precision)
    from due, webhook_endpoints e
    where d.id = due.id and e.id = d.endpoint_id
    returning d.id, d.org_id, d.attempts, e.url, e.secret, d.payload::text as body`.execute(db);
  return rows;
}

/** Milliseconds until the earliest pending delivery is due (0 when one is due now); undefined when none is pending. */
export async function msUntilNextDue(db: Executor): Promise<number | undefined> {
  const { rows } = await sql<{ ms: number | null }>`
    select greatest(0, extract(epoch from (min(next_attempt_at) - clock_timestamp())) * 1000)::float8 as ms
    from webhook_deliveries where status = 'pending'`.execute(db);
  const ms = rows[0]?.ms;
  return ms === null || ms === undefined ? undefined : Number(ms);
}

export interface AttemptResult {
  /** The HTTP status, when an answer came. */
  httpStatus: number | null;
  /** Why it failed; undefined when it succeeded. */
  error?: string;
  /** When to try again; undefined when there is no retry left (or it succeeded). */
  retryAt?: Date;
}

export async function recordAttempt(db: Executor, id: string, result: AttemptResult): Promise<void> {
  const done = result.error === undefined || result.retryAt === undefined;
  await db
    .updateTable("webhook_deliveries")
    .set({
      status: result.error === undefined ? "succeeded" : done ? "failed" : "pending",
      last_http_status: result.httpStatus,
      last_error: result.error ?? null,
      ...(result.retryAt === undefined ? {} : { next_attempt_at: result.retryAt }),
      completed_at: done ? sql<Date>`clock_timestamp()` : null,
    })
    .where("id", "=", id)
    .execute();
}
