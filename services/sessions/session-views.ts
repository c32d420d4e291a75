// Computes what a session's response needs beyond its own row (the token usage of its subtree)
// and builds the response shapes.
import type { Executor } from "../database.js";
import type { SessionListRow } from "./list-queries.js";
import type { SessionRow } from "./tables.js";
import { loadTrees, usageNodeOf, usageNodesOfJson, type UsageSource } from "./tree-queries.js";
import { computeUsage, type SessionUsage, type UsageNode } from "./usage.js";
import { toSession, toSessionListItem } from "./views.js";

/** Usage of each of `rows`, given the rest of their trees; the rows' own copies win (e.g. just written). */
function usageWithTrees(rows: readonly UsageSource[], others: readonly UsageNode[]): Map<string, SessionUsage> {
  const nodes = new Map<string, UsageNode>();
  for (const n of others) nodes.set(n.id, n);
  for (const r of rows) nodes.set(r.id, usageNodeOf(r));
  return computeUsage([...nodes.values()]);
}

/** Token usage of each given session, its trees read in one query. */
export async function usageOf(db: Executor, orgId: string, rows: readonly SessionRow[]): Promise<Map<string, SessionUsage>> {
  const trees = await loadTrees(db, orgId, [...new Set(rows.map((r) => r.root_id))]);
  return usageWithTrees(rows, trees);
}

/** A session's response when its tree came with it (findSessionWithTree). */
export function sessionViewWithTree(row: SessionRow, tree: readonly UsageNode[]) {
  return toSession(row, usageWithTrees([row], tree).get(row.id)!);
}

/** A session's response after a write: its tree is read again. */
export async function sessionView(db: Executor, row: SessionRow) {
  return toSession(row, (await usageOf(db, row.org_id, [row])).get(row.id)!);
}

/** List items; the page's rows carry their trees (listSessionsPage). */
export function sessionListView(rows: readonly SessionListRow[]) {
  const others: UsageNode[] = [];
  for (const row of rows) others.push(...usageNodesOfJson(row.tree));
  const usage = usageWithTrees(rows, others);
  return rows.map((row) => toSessionListItem(row, usage.get(row.id)!));
}
