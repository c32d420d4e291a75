// Table types of the organization area (organizations, users, API keys, service accounts).
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
}
