// What the token usage of sessions is computed from (usage.ts): every session of their trees,
// found by the root_id index (migration 0009) rather than by walking parent links. A tree is
// loaded whole: it holds every subtree in it, and computeUsage sums only a node's descendants, so
// the rest of the tree changes nothing.
import { sql, type RawBuilder } from "kysely";
import type { Executor } from "../database.js";
import { compiledQuery } from "../platform/compiled-query.js";
import { ownUsageOf } from "./session-queries.js";
import type { SessionRow, StoredTokenUsage, UsageColumns } from "./tables.js";
import type { UsageNode } from "./usage.js";

/** A session row that carries what its own usage node needs. */
export type UsageSource = Pick<SessionRow, "id" | "parent_session_id" | "settings" | UsageColumns>;

/** One tree member as treeJsonOf returns it: [id, parentId, the six usage columns, reported children]. */
export type TreeMemberJson = [string, string | null, number, number, number, number, number, number, Record<string, StoredTokenUsage> | null];

export function usageNodeOf(row: UsageSource): UsageNode {
  return { id: row.id, parentId: row.parent_session_id, own: ownUsageOf(row), reported: row.settings.childInclusiveTokenUsageBySessionId ?? {} };
}

export function usageNodesOfJson(members: readonly TreeMemberJson[] | null): UsageNode[] {
  if (members === null) return [];
  return members.map(([id, parentId, inputTokens, outputTokens, cacheCreationTokens, cacheReadTokens, thinkingTokens, factoryCredits, reported]) => ({
    id,
    parentId,
    own: { inputTokens, outputTokens, cacheCreationTokens, cacheReadTokens, thinkingTokens, factoryCredits },
    reported: reported ?? {},
  }));
}

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

/** Every session of the trees with these roots, in the organization. */
export async function loadTrees(db: Executor, orgId: string, rootIds: readonly string[]): Promise<UsageNode[]> {
  if (rootIds.length === 0) return [];
  const rows = await db
    .selectFrom("sessions")
    .select(["id", "parent_session_id", "input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens", "thinking_tokens", "factory_credits"])
    .select(sql<Record<string, StoredTokenUsage> | null>`settings->'childInclusiveTokenUsageBySessionId'`.as("reported"))
    .where("org_id", "=", orgId)
    .where("root_id", "in", rootIds)
    .execute();
  return rows.map((r) => ({ id: r.id, parentId: r.parent_session_id, own: ownUsageOf(r), reported: r.reported ?? {} }));
}

const sessionWithTree = (db: Executor, orgId: string, sessionId: string) =>
  db.selectFrom("sessions as s").selectAll("s").select(treeJsonOf("s").as("tree")).where("s.org_id", "=", orgId).where("s.id", "=", sessionId);

// GetSession's statement, built and compiled once per variant (platform/compiled-query.ts).
const findAny = compiledQuery(2, (db: Executor, orgId: string, sessionId: string) => sessionWithTree(db, orgId, sessionId));
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
): Promise<{ row: SessionRow; tree: UsageNode[] } | undefined> {
  const result = ownerId === undefined ? await findAny(db, orgId, sessionId) : await findOwned(db, orgId, sessionId, ownerId);
  const found = result.rows[0];
  if (!found) return undefined;
  const { tree, ...row } = found;
  return { row, tree: usageNodesOfJson(tree) };
}
