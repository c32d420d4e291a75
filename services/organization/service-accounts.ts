// Service accounts: the workload credentials of the internal gRPC services (docs/architecture.md).
// A token is `aps_` + 32 random bytes, shown once; only its SHA-256 is stored. An account holds
// scopes (what it may call) and, optionally, the one organization it acts for.
import { randomBytes } from "node:crypto";
import type { Selectable } from "kysely";
import type { Executor } from "../database.js";
import { hashApiKey } from "./queries.js";
import { newId } from "../platform/ids.js";
import type { ServiceAccountsTable } from "./tables.js";

export const SERVICE_ACCOUNT_PREFIX = "aps_";

export type ServiceAccountRow = Selectable<ServiceAccountsTable>;
/** An account as listed: everything but the token's hash. */
export type ServiceAccountListing = Omit<ServiceAccountRow, "token_hash">;
const LISTED = ["id", "name", "org_id", "scopes", "prefix", "created_at", "revoked_at"] as const;

export interface NewServiceAccount {
  name: string;
  scopes: readonly string[];
  orgId: string | null;
}

/** Creates an account; returns it with its token, which is never stored. */
export async function createServiceAccount(
  db: Executor,
  init: NewServiceAccount,
): Promise<{ account: ServiceAccountListing; token: string }> {
  const token = SERVICE_ACCOUNT_PREFIX + randomBytes(32).toString("base64url");
  const account = await db
    .insertInto("service_accounts")
    .values({
      id: newId(),
      name: init.name,
      org_id: init.orgId,
      scopes: [...init.scopes],
      token_hash: hashApiKey(token),
      prefix: token.slice(0, 10),
    })
    .returning(LISTED)
    .executeTakeFirstOrThrow();
  return { account, token };
}

/** Every account (or one organization's), oldest first; revoked ones included, marked. */
export async function listServiceAccounts(db: Executor, orgId?: string): Promise<ServiceAccountListing[]> {
  let q = db.selectFrom("service_accounts").select(LISTED);
  if (orgId !== undefined) q = q.where("org_id", "=", orgId);
  return q.orderBy("created_at").orderBy("id").execute();
}

/** Revokes an account; false when there is no live account with this id. */
export async function revokeServiceAccount(db: Executor, id: string): Promise<boolean> {
  const res = await db
    .updateTable("service_accounts")
    .set({ revoked_at: new Date() })
    .where("id", "=", id)
    .where("revoked_at", "is", null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** The live account with this token hash. */
export async function findServiceAccountByHash(
  db: Executor,
  tokenHash: string,
): Promise<ServiceAccountRow | undefined> {
  return db
    .selectFrom("service_accounts")
    .selectAll()
    .where("token_hash", "=", tokenHash)
    .where("revoked_at", "is", null)
    .executeTakeFirst();
}
