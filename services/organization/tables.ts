// Table types of the organization area (organizations, users, API keys, service accounts,
// webhook endpoints and their deliveries).
import type { ColumnType } from "kysely";

/** A timestamp the database fills in on insert unless given. */
type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>;

export interface OrganizationsTable {
  id: string;
  name: string;
  /** free, team or enterprise: picks the rate limit. */
  plan: string;
  /** Overrides the plan's requests per minute when set. */
  rate_limit_per_minute: number | null;
  created_at: CreatedAt;
}

export interface UsersTable {
  id: string;
  org_id: string;
  email: string;
  first_name: string;
  last_name: string;
  role: string;
  metadata: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: CreatedAt;
  last_sign_in_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface ApiKeysTable {
  id: string;
  org_id: string;
  user_id: string;
  /** SHA-256 of the key, hex. The key itself is shown once and never stored. */
  key_hash: string;
  /** The first characters of the key, to tell keys apart in listings. */
  prefix: string;
  created_at: CreatedAt;
  revoked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** Workload credentials of the internal gRPC services (services/organization/service-accounts.ts). */
export interface ServiceAccountsTable {
  id: string;
  name: string;
  /** The one organization the account acts for; null: any organization a request names. */
  org_id: string | null;
  /** What it may call: scope names declared by the modules' internal policies. */
  scopes: ColumnType<string[], string[], string[]>;
  /** SHA-256 of the token, hex. The token is shown once and never stored. */
  token_hash: string;
  /** The first characters of the token, to tell accounts apart in listings. */
  prefix: string;
  created_at: CreatedAt;
  revoked_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

export interface OrganizationTables {
  organizations: OrganizationsTable;
  users: UsersTable;
  api_keys: ApiKeysTable;
  service_accounts: ServiceAccountsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
}

export type WebhookEventType = "session.status_changed" | "message.created" | "computer.status_changed";
export type DeliveryStatus = "pending" | "succeeded" | "failed";

/** An organization's webhook endpoint (migration 0018). */
export interface WebhookEndpointsTable {
  id: string;
  org_id: string;
  url: string;
  events: ColumnType<WebhookEventType[], WebhookEventType[], WebhookEventType[]>;
  description: string;
  /** whsec_…: signs every delivery; shown to the client once, at creation. */
  secret: string;
  created_at: CreatedAt;
}

/** A delivery in the outbox: one event for one endpoint, with its attempts so far. */
export interface WebhookDeliveriesTable {
  /** msg_…: the webhook-id header, the same on every attempt. */
  id: ColumnType<string, string | undefined, never>;
  org_id: string;
  endpoint_id: string;
  event_type: WebhookEventType;
  /** The Standard Webhooks body: {type, timestamp, data}. */
  payload: ColumnType<Record<string, unknown>, string, never>;
  status: ColumnType<DeliveryStatus, DeliveryStatus | undefined, DeliveryStatus>;
  attempts: ColumnType<number, number | undefined, number>;
  last_http_status: number | null;
  last_error: string | null;
  next_attempt_at: CreatedAt;
  created_at: CreatedAt;
  completed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}
