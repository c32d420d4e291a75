// The idempotency_keys table's queries (idempotency.ts says how keys behave): a key is claimed
// inside the transaction of the write it guards, and expired keys are deleted now and then.
import { sql, type Selectable, type Transaction } from "kysely";
import type { Database, Executor } from "../database.js";
import { conflict } from "../platform/errors.js";
import type { IdempotencyKeysTable } from "./tables.js";

export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/** What a key's first request returned (its row's response). */
export type StoredResult = Selectable<IdempotencyKeysTable>["response"];

export interface KeyScope {
  orgId: string;
  credentialId: string;
  key: string;
}

/**
 * Claims the key for this request with the result it will return. Returns undefined when the
 * claim succeeded (go on and do the work in the same transaction), or the first request's result
 * when the key was already used with the same body. Throws a 409 when it was used with another.
 */
export async function claimIdempotencyKey<R extends StoredResult>(
  trx: Transaction<Database>,
  scope: KeyScope,
  hash: string,
  result: R,
): Promise<R | undefined> {
  const expiredBefore = new Date(Date.now() - IDEMPOTENCY_KEY_TTL_MS);
  const claimed = await trx
    .insertInto("idempotency_keys")
    .values({
      org_id: scope.orgId,
      credential_id: scope.credentialId,
      key: scope.key,
      request_hash: hash,
      response: JSON.stringify(result),
    })
    .onConflict((oc) =>
      oc
        .columns(["org_id", "credential_id", "key"])
        .doUpdateSet({ request_hash: hash, response: JSON.stringify(result), created_at: sql`now()` })
        .where("idempotency_keys.created_at", "<", expiredBefore),
    )
    .returning("key")
    .executeTakeFirst();
  if (claimed) return undefined;
  const existing = await trx
    .selectFrom("idempotency_keys")
    .select(["request_hash", "response"])
    .where("org_id", "=", scope.orgId)
    .where("credential_id", "=", scope.credentialId)
    .where("key", "=", scope.key)
    .executeTakeFirstOrThrow();
  if (existing.request_hash !== hash) {
    throw conflict("Idempotency-Key: was already used with a different request body; use a new key for a new request");
  }
  // The same hash is the same kind of request (the hash covers what distinguishes them), so its
  // stored result has this one's shape.
  return existing.response as R;
}

/** Deletes expired keys (a worker calls it now and then). */
export async function pruneIdempotencyKeys(db: Executor): Promise<number> {
  const res = await db
    .deleteFrom("idempotency_keys")
    .where("created_at", "<", new Date(Date.now() - IDEMPOTENCY_KEY_TTL_MS))
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}
