// Organizations, users and API keys for tests, written through the same repository functions
// the CLI uses.
import type { Kysely } from "kysely";
import type { Database } from "../../services/database.js";
import type { Role } from "../../services/platform/context.js";
import { createApiKey, createOrganization, createUser } from "../../services/organization/queries.js";
import { createServiceAccount } from "../../services/organization/service-accounts.js";
import { SCOPES } from "../../services/modules.js";

export interface TestUser {
  orgId: string;
  userId: string;
  email: string;
  role: Role;
  key: string;
}

let seq = 0;

export async function createTestOrg(db: Kysely<Database>, name = "Test Org"): Promise<string> {
  return (await createOrganization(db, { name: `${name} ${++seq}` })).id;
}

export async function createTestUser(
  db: Kysely<Database>,
  orgId: string,
  role: Role,
  email?: string,
): Promise<TestUser> {
  const address = email ?? `${role}-${++seq}-${Math.random().toString(36).slice(2, 8)}@example.test`;
  const user = await createUser(db, { orgId, email: address, role, firstName: role, lastName: `User${seq}` });
  const { key } = await createApiKey(db, orgId, user.id);
  return { orgId, userId: user.id, email: address, role, key };
}

/**
 * A service account's token (for the internal gRPC listener): unbound with every scope unless
 * told otherwise.
 */
export async function createTestServiceAccount(
  db: Kysely<Database>,
  options: { orgId?: string; scopes?: string[]; name?: string } = {},
): Promise<string> {
  const { token } = await createServiceAccount(db, {
    name: options.name ?? `test-${++seq}`,
    scopes: options.scopes ?? [...SCOPES],
    orgId: options.orgId ?? null,
  });
  return token;
}

/** The metadata that authenticates a gRPC call with a bearer token. */
export const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** fetch against the REST edge with a bearer key; JSON body when given. */
export async function api(
  baseUrl: string,
  key: string | undefined,
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...init.headers };
  if (key) headers.authorization = `Bearer ${key}`;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(baseUrl + path, {
    method: init.method ?? "GET",
    headers,
    body: init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body),
  });
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}
