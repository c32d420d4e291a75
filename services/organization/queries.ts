// Repository functions of the organization area. Each takes an Executor (db or transaction)
// and is scoped by organization where the row belongs to one.
import { newId } from "../platform/ids.js";
import { createHash, randomBytes } from "node:crypto";
import { sql, type Selectable } from "kysely";
import type { Executor } from "../database.js";
import type { Role } from "../platform/context.js";
import type { ApiKeysTable, OrganizationsTable, UsersTable } from "./tables.js";

export type OrganizationRow = Selectable<OrganizationsTable>;
export type UserRow = Selectable<UsersTable>;
type ApiKeyRow = Selectable<ApiKeysTable>;

/** What a caller's rights and rate limit come from: the user's role and the organization's plan. */
type Standing = Pick<UserRow, "role"> & Pick<OrganizationRow, "plan" | "rate_limit_per_minute">;

export async function createOrganization(
  db: Executor,
  init: { name: string; plan?: string; id?: string },
): Promise<OrganizationRow> {
  return db
    .insertInto("organizations")
    .values({ id: init.id ?? newId(), name: init.name, plan: init.plan ?? "team", rate_limit_per_minute: null })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findOrganization(db: Executor, id: string): Promise<OrganizationRow | undefined> {
  return db.selectFrom("organizations").selectAll().where("id", "=", id).executeTakeFirst();
}

export async function findOrganizationByName(db: Executor, name: string): Promise<OrganizationRow | undefined> {
  return db
    .selectFrom("organizations")
    .selectAll()
    .where("name", "=", name)
    .orderBy("created_at")
    .limit(1)
    .executeTakeFirst();
}

export async function setOrganizationRateLimit(db: Executor, orgId: string, perMinute: number | null): Promise<void> {
  await db.updateTable("organizations").set({ rate_limit_per_minute: perMinute }).where("id", "=", orgId).execute();
}

export interface NewUser {
  orgId: string;
  email: string;
  role: Role;
  firstName?: string;
  lastName?: string;
  metadata?: Record<string, unknown>;
  id?: string;
  createdAt?: Date;
}

export async function createUser(db: Executor, user: NewUser): Promise<UserRow> {
  return db
    .insertInto("users")
    .values({
      id: user.id ?? newId(),
      org_id: user.orgId,
      email: user.email,
      role: user.role,
      first_name: user.firstName ?? "",
      last_name: user.lastName ?? "",
      metadata: JSON.stringify(user.metadata ?? {}),
      ...(user.createdAt ? { created_at: user.createdAt } : {}),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findUser(db: Executor, orgId: string, userId: string): Promise<UserRow | undefined> {
  return db.selectFrom("users").selectAll().where("org_id", "=", orgId).where("id", "=", userId).executeTakeFirst();
}

export async function findUserAnyOrg(db: Executor, userId: string): Promise<UserRow | undefined> {
  return db.selectFrom("users").selectAll().where("id", "=", userId).executeTakeFirst();
}

export async function findUsersByEmail(db: Executor, orgId: string, emails: readonly string[]): Promise<UserRow[]> {
  if (emails.length === 0) return [];
  return db
    .selectFrom("users")
    .selectAll()
    .where("org_id", "=", orgId)
    .where(
      sql<string>`lower(email)`,
      "in",
      emails.map((e) => e.toLowerCase()),
    )
    .execute();
}

/** Keyset position of the users list: oldest first by (created_at, id). */
export interface UserPosition {
  createdAt: string;
  id: string;
}

export async function listUsersPage(
  db: Executor,
  orgId: string,
  limit: number,
  after?: UserPosition,
): Promise<UserRow[]> {
  let q = db.selectFrom("users").selectAll().where("org_id", "=", orgId);
  if (after) {
    // Tuple comparison keeps the keyset exact even when timestamps collide.
    q = q.where(sql<boolean>`(created_at, id) > (${new Date(after.createdAt)}::timestamptz, ${after.id})`);
  }
  return q.orderBy("created_at").orderBy("id").limit(limit).execute();
}

export const API_KEY_PREFIX = "apk_";

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** Creates an API key for a user; returns the key itself, which is never stored. */
export async function createApiKey(db: Executor, orgId: string, userId: string): Promise<{ id: string; key: string }> {
  const key = API_KEY_PREFIX + randomBytes(32).toString("base64url");
  const id = newId();
  await db
    .insertInto("api_keys")
    .values({ id, org_id: orgId, user_id: userId, key_hash: hashApiKey(key), prefix: key.slice(0, 10) })
    .execute();
  return { id, key };
}

export async function revokeApiKey(db: Executor, orgId: string, keyId: string): Promise<boolean> {
  const res = await db
    .updateTable("api_keys")
    .set({ revoked_at: new Date() })
    .where("org_id", "=", orgId)
    .where("id", "=", keyId)
    .where("revoked_at", "is", null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export type CredentialRow = { key_id: ApiKeyRow["id"] } & Pick<ApiKeyRow, "org_id" | "user_id"> & Standing;

/** The live (unrevoked) key with this hash, joined with its user and organization. */
export async function findCredentialByHash(db: Executor, keyHash: string): Promise<CredentialRow | undefined> {
  return db
    .selectFrom("api_keys as k")
    .innerJoin("users as u", (j) => j.onRef("u.id", "=", "k.user_id").onRef("u.org_id", "=", "k.org_id"))
    .innerJoin("organizations as o", "o.id", "k.org_id")
    .select(["k.id as key_id", "k.org_id", "k.user_id", "u.role", "o.plan", "o.rate_limit_per_minute"])
    .where("k.key_hash", "=", keyHash)
    .where("k.revoked_at", "is", null)
    .executeTakeFirst();
}

/**
 * Records a sign-in (a verified access token). Written at most once a minute per user, so
 * token verification on a cache miss never turns into a write per request.
 */
export async function recordSignIn(db: Executor, orgId: string, userId: string): Promise<void> {
  await db
    .updateTable("users")
    .set({ last_sign_in_at: sql<Date>`now()` })
    .where("org_id", "=", orgId)
    .where("id", "=", userId)
    .where((eb) =>
      eb.or([eb("last_sign_in_at", "is", null), eb("last_sign_in_at", "<", sql<Date>`now() - interval '1 minute'`)]),
    )
    .execute();
}

export type MemberRow = { user_id: UserRow["id"] } & Pick<UserRow, "org_id"> & Standing;

export async function findMember(db: Executor, orgId: string, userId: string): Promise<MemberRow | undefined> {
  return db
    .selectFrom("users as u")
    .innerJoin("organizations as o", "o.id", "u.org_id")
    .select(["u.id as user_id", "u.org_id", "u.role", "o.plan", "o.rate_limit_per_minute"])
    .where("u.org_id", "=", orgId)
    .where("u.id", "=", userId)
    .executeTakeFirst();
}
