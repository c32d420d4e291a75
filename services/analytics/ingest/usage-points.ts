// OpenTelemetry usage points stored as the rows our own format would have sent. Claude Code
// reports a model's tokens as one `claude_code.token.usage` data point per `type` (input, output,
// cacheRead, cacheCreation) and their cost as a `claude_code.cost.usage` point, and an SDK's
// collection gives every point of it the same time: five model_usage rows alike in everything
// but which count (or the cost) is set, where a native event is one row carrying them all. Every
// analytic reads those rows by summing their counts and costs (docs/metrics.md: tokens, credits,
// costs, the credit balance), so rows alike in all else are stored as one row of their sums: the
// same figures, a fifth of the rows and of their index entries (the model-usage index costs
// Postgres about 2 µs a row: BENCHMARKS.md). And the row's tokens then carry the cost the client
// reported for them, as an api_request event's do: /costs prices only usage without a reported
// cost, and priced the token rows of a metric session beside its cost row, counting the cost
// twice once a price was set. Each point keeps its own claim (store.ts), so a retried or
// re-batched export still counts once, point by point.
import { type EventRow, MAX_COST_USD, MAX_TOKENS } from "./events.js";

/**
 * A row this merges: an OTLP metric's model usage, with none of the other types' fields (the
 * mapping sets none on model_usage; a row with one stays apart).
 */
const mergeable = (r: EventRow) =>
  r.type === "model_usage" &&
  r.source === "otlp_metric" &&
  r.autonomy === null &&
  r.role === null &&
  r.tool === null &&
  r.mcpServer === null &&
  r.name === null &&
  r.hookEvent === null &&
  r.hookMatcher === null &&
  r.hookCommand === null &&
  r.op === null &&
  r.path === null &&
  r.extension === null &&
  r.language === null &&
  r.linesAdded === null &&
  r.linesRemoved === null &&
  r.decision === null;

/** Whether two mergeable rows are alike in everything but their counts, costs and event IDs. */
const alike = (a: EventRow, b: EventRow) =>
  a.occurredAt.getTime() === b.occurredAt.getTime() &&
  a.orgId === b.orgId &&
  a.userId === b.userId &&
  a.userEmail === b.userEmail &&
  a.sessionId === b.sessionId &&
  a.client === b.client &&
  a.modelId === b.modelId &&
  a.modelTier === b.modelTier;

const add = (a: number | null, b: number | null) => (a === null && b === null ? null : (a ?? 0) + (b ?? 0));

/** Whether two counts (or costs) add up within what validation takes of one (MAX_TOKENS, MAX_COST_USD). */
const fits = (a: number | null, b: number | null, max = MAX_TOKENS) => (a ?? 0) + (b ?? 0) <= max;

/**
 * The rows with OTLP usage points alike but for their counts and costs folded into one row each
 * (the first one's place and event ID, the counts and costs summed, a cost null when none was);
 * every other row as it is, in its order. A fold that would pass MAX_TOKENS in a count (or
 * MAX_COST_USD in the cost) is not made: that row stays apart, and later ones fold into it.
 * `rows` and its rows are not changed (the store prepares them again when some claims fail): a
 * row folded into is copied once, and the copy takes the counts.
 */
export function mergeUsagePoints(rows: readonly EventRow[]): EventRow[] {
  const first = rows.findIndex(mergeable);
  if (first === -1) return rows as EventRow[];
  const out = rows.slice(0, first);
  /** Whether out[i] is a copy made here. */
  const copied: boolean[] = [];
  // The last row of each (time, session, model) in `out`, found by a short key: alike() decides
  // whether a row folds into it, so the key needs only to find it, not to tell rows apart.
  const open = new Map<string, number>();
  for (let k = first; k < rows.length; k++) {
    const r = rows[k]!;
    if (!mergeable(r)) {
      out.push(r);
      continue;
    }
    const key = `${r.occurredAt.getTime()}\u0000${r.sessionId}\u0000${r.modelId}`;
    const i = open.get(key);
    const into = i === undefined ? undefined : out[i]!;
    if (
      into !== undefined &&
      alike(into, r) &&
      fits(into.inputTokens, r.inputTokens) &&
      fits(into.outputTokens, r.outputTokens) &&
      fits(into.cacheReadTokens, r.cacheReadTokens) &&
      fits(into.cacheWriteTokens, r.cacheWriteTokens) &&
      fits(into.costUsd, r.costUsd, MAX_COST_USD)
    ) {
      const row = copied[i!] ? into : (out[i!] = { ...into });
      copied[i!] = true;
      row.inputTokens = add(row.inputTokens, r.inputTokens);
      row.outputTokens = add(row.outputTokens, r.outputTokens);
      row.cacheReadTokens = add(row.cacheReadTokens, r.cacheReadTokens);
      row.cacheWriteTokens = add(row.cacheWriteTokens, r.cacheWriteTokens);
      row.costUsd = add(row.costUsd, r.costUsd);
      continue;
    }
    open.set(key, out.push(r) - 1);
  }
  return out;
}
