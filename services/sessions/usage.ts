// Token usage of a session tree, computed at read time from what is stored, so it can never
// drift from the stored usage:
//   tokenUsage(s)          = s's own usage (the sum of its runners' ModelUsage reports)
//   childMap(s)[c]         = inclusive(c) for every child session c this service holds, plus the
//                            entries a client reported through PATCH for children it ran itself
//   inclusiveTokenUsage(s) = tokenUsage(s) + Σ childMap(s)
// A reported entry whose key is a session of the same tree (a held child, the session itself, an
// ancestor, any other member) is ignored: that session's own numbers are counted where it stands,
// so nothing counts twice. Writes refuse such keys (refuseHeldSessions, settings.ts); this keeps
// entries stored before that rule harmless.
import type { StoredTokenUsage } from "./tables.js";
import { TOKEN_USAGE_KEYS, ZERO_USAGE } from "./settings.js";

export interface UsageNode {
  id: string;
  parentId: string | null;
  own: StoredTokenUsage;
  reported: Readonly<Record<string, StoredTokenUsage>>;
}

export interface SessionUsage {
  own: StoredTokenUsage;
  inclusive: StoredTokenUsage;
  children: Record<string, StoredTokenUsage>;
}

export function addUsage(a: StoredTokenUsage, b: StoredTokenUsage): StoredTokenUsage {
  const out = { ...a };
  for (const k of TOKEN_USAGE_KEYS) out[k] = a[k] + b[k];
  return out;
}

/**
 * Usage of every node given. `nodes` must hold each requested session and all its descendants
 * (a parent link to a node not given is ignored: that parent is outside the set asked for).
 */
export function computeUsage(nodes: readonly UsageNode[]): Map<string, SessionUsage> {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const childrenOf = new Map<string, string[]>();
  for (const n of nodes) {
    if (n.parentId === null || !byId.has(n.parentId)) continue;
    const list = childrenOf.get(n.parentId) ?? [];
    list.push(n.id);
    childrenOf.set(n.parentId, list);
  }
  const roots = new Map<string, string>();
  const rootOf = (id: string): string => {
    let root = roots.get(id);
    if (root === undefined) {
      const parentId = byId.get(id)!.parentId;
      root = parentId === null || !byId.has(parentId) ? id : rootOf(parentId);
      roots.set(id, root);
    }
    return root;
  };
  const sameTree = (a: string, b: string) => byId.has(b) && rootOf(a) === rootOf(b);
  const result = new Map<string, SessionUsage>();
  const visit = (id: string, depth: number): SessionUsage => {
    const done = result.get(id);
    if (done) return done;
    // Parents are fixed at creation and must already exist, so the graph is a forest; the
    // depth guard only turns a corrupted row into an error instead of a stack overflow.
    if (depth > 10_000) throw new Error(`session tree too deep at ${id}`);
    const node = byId.get(id)!;
    const held = childrenOf.get(id) ?? [];
    const children: Record<string, StoredTokenUsage> = {};
    for (const [key, usage] of Object.entries(node.reported)) if (!sameTree(id, key)) children[key] = usage;
    for (const child of held) children[child] = visit(child, depth + 1).inclusive;
    const inclusive = Object.values(children).reduce(addUsage, node.own);
    const usage = { own: node.own, inclusive, children };
    result.set(id, usage);
    return usage;
  };
  for (const n of nodes) visit(n.id, 0);
  return result;
}

export const zeroUsage = (): StoredTokenUsage => ({ ...ZERO_USAGE });
