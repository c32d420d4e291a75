// OpenTelemetry token points stored as the rows our own format would have sent. Claude Code
// reports a model's tokens as one `claude_code.token.usage` data point per `type` (input, output,
// cacheRead, cacheCreation), and an SDK's collection gives every point of it the same time: four
// model_usage rows alike in everything but which count is set, where a native event is one row
// carrying the four. Every analytic reads those rows by summing their counts (docs/metrics.md:
// tokens, credits, costs, the credit balance), so rows alike in all else are stored as one row of
// their sums: the same figures, a quarter of the rows and of their index entries (the model-usage
// index costs Postgres about 2 µs a row: BENCHMARKS.md). Each point keeps its own claim
// (store.ts), so a retried or re-batched export still counts once, point by point.
import { type EventRow, MAX_TOKENS } from "./events.js";

/**
 * A row this merges: an OTLP metric's model usage with no client-reported cost, and none of the
 * other types' fields (the mapping sets none on model_usage; a row with one stays apart).
 */
const mergeable = (r: EventRow) =>
  r.type === "model_usage" &&
  r.source === "otlp_metric" &&
  r.costUsd === null &&
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

/** A text field in a key, null told apart from every string ("n" or "s" first; no stored text holds NUL). */
const part = (v: string | null) => (v === null ? "n" : `s${v}`);

/** What a mergeable row is besides its counts and its event ID (which only its claim keeps). */
const keyOf = (r: EventRow) =>
  `${r.orgId}\u0000${r.occurredAt.getTime()}\u0000${r.userId}\u0000${part(r.userEmail)}\u0000${part(r.sessionId)}\u0000${r.client}\u0000${part(r.modelId)}\u0000${part(r.modelTier)}`;

const add = (a: number | null, b: number | null) => (a === null && b === null ? null : (a ?? 0) + (b ?? 0));

/**
 * The rows with OTLP token points alike but for their counts folded into one row each (the first
 * one's place and event ID, the counts summed); every other row as it is, in its order. A fold
 * that would pass MAX_TOKENS in a count is not made: that row stays apart. `rows` is not changed.
 */
export function mergeUsagePoints(rows: readonly EventRow[]): EventRow[] {
  if (!rows.some(mergeable)) return rows as EventRow[];
  const out: EventRow[] = [];
  const at = new Map<string, number>();
  for (const r of rows) {
    if (!mergeable(r)) {
      out.push(r);
      continue;
    }
    const key = keyOf(r);
    const i = at.get(key);
    const into = i === undefined ? undefined : out[i]!;
    const merged =
      into === undefined
        ? undefined
        : {
            ...into,
            inputTokens: add(into.inputTokens, r.inputTokens),
            outputTokens: add(into.outputTokens, r.outputTokens),
            cacheReadTokens: add(into.cacheReadTokens, r.cacheReadTokens),
            cacheWriteTokens: add(into.cacheWriteTokens, r.cacheWriteTokens),
          };
    if (
      merged !== undefined &&
      [merged.inputTokens, merged.outputTokens, merged.cacheReadTokens, merged.cacheWriteTokens].every(
        (n) => n === null || n <= MAX_TOKENS,
      )
    ) {
      out[i!] = merged;
      continue;
    }
    at.set(key, out.push(r) - 1);
  }
  return out;
}
