// Sessions read with the rest of their trees, for their token usage (usage.ts): every session of
// a tree is found by the root_id index (migration 0009) rather than by walking parent links. A
// tree is read whole: it holds every subtree in it, and computeUsage sums only a node's
// descendants, so the rest of the tree changes nothing. views.ts turns what is read here into
// the responses.
import { sql, type RawBuilder } from "kysely";
import type { Executor } from "../database.js";
import { compiledQuery } from "../platform/compiled-query.js";
import type { SessionRow, StoredSettings } from "./tables.js";

/** One tree member as treeJsonOf returns it: [id, parentId, the six usage columns, reported children]. */
export type TreeMemberJson = [
  id: SessionRow["id"],
  parentId: SessionRow["parent_session_id"],
  inputTokens: SessionRow["input_tokens"],
  outputTokens: SessionRow["output_tokens"],
  cacheCreationTokens: SessionRow["cache_creation_tokens"],
  cacheReadTokens: SessionRow["cache_read_tokens"],
  thinkingTokens: SessionRow["thinking_tokens"],
  factoryCredits: SessionRow["factory_credits"],
  reported: NonNullable<StoredSettings["childInclusiveTokenUsageBySessionId"]> | null,
];

/** A session with the other members of its tree (null when it has none). */
export type SessionWithTreeRow = SessionRow & { tree: TreeMemberJson[] | null };

/**
 * A scalar subquery for a select over `sessions as <alias>`: the other members of that session's
 * tree as a JSON array of TreeMemberJson, or null when it has none (a session without children
 * and parent: one probe of the root_id index). Numbers travel as JSON text, which Postgres prints
 * exactly (shortest round-trip form), so they parse to the stored doubles.
 */
export function treeJsonOf(alias: string): RawBuilder<TreeMemberJson[] | null> {
  const col = (name: string) => sql.ref(`${alias}.${name}`);
  return sql<TreeMemberJson[] | null>`(
    select json_agg(json_build_array(t.id, t.parent_session_id, t.input_tokens, t.output_tokens, t.cache_creation_tokens,
                                     t.cache_read_tokens, t.thinking_tokens, t.factory_credits, t.settings->'childInclusiveTokenUsageBySessionId'))
    from sessions t where t.root_id = ${col("root_id")} and t.org_id = ${col("org_id")} and t.id <> ${col("id")})`;
}

/** The other members of `row`'s tree: what a session's response needs after a write. */
export async function treeOf(db: Executor, row: Pick<SessionRow, "id">): Promise<TreeMemberJson[] | null> {
  const found = await db
    .selectFrom("sessions as s")
    .select(treeJsonOf("s").as("tree"))
    .where("s.id", "=", row.id)
    .executeTakeFirstOrThrow();
  return found.tree;
}

const sessionWithTree = (db: Executor, orgId: string, sessionId: string) =>
  db
    .selectFrom("sessions as s")
    .selectAll("s")
    .select(treeJsonOf("s").as("tree"))
    .where("s.org_id", "=", orgId)
    .where("s.id", "=", sessionId);

// GetSession's statement, built and compiled once per variant (platform/compiled-query.ts).
const findAny = compiledQuery(2, (db: Executor, orgId: string, sessionId: string) =>
  sessionWithTree(db, orgId, sessionId),
);
const findOwned = compiledQuery(3, (db: Executor, orgId: string, sessionId: string, ownerId: string) =>
  sessionWithTree(db, orgId, sessionId).where("s.user_id", "=", ownerId),
);

/**
 * The session if it exists in the organization (and, when `ownerId` is given, belongs to that
 * user), with the rest of its tree: what GetSession shows, in one statement.
 */
export async function findSessionWithTree(
  db: Executor,
  orgId: string,
  sessionId: string,
  ownerId?: string,
): Promise<SessionWithTreeRow | undefined> {
  const result =
    ownerId === undefined ? await findAny(db, orgId, sessionId) : await findOwned(db, orgId, sessionId, ownerId);
  return result.rows[0];
}
