// OTLP usage points alike but for their counts and costs become one row; nothing else is folded,
// and the sums are what the rows held.
import { describe, expect, it } from "vitest";
import { type EventRow, type IncomingEvent, MAX_COST_USD, MAX_TOKENS, validateEvent } from "./events.js";
import { mergeUsagePoints } from "./usage-points.js";

const NOW = Date.parse("2026-03-05T00:00:00Z");

function row(fields: Partial<IncomingEvent>, source: EventRow["source"] = "otlp_metric"): EventRow {
  const v = validateEvent(
    {
      type: "model_usage",
      time: "2026-03-02T10:00:00.123Z",
      orgId: "org_1",
      userId: "user_1",
      userEmail: "a@example.test",
      sessionId: "s1",
      client: "terminal-ui",
      modelId: "claude-sonnet-4-5",
      modelTier: "standard",
      inputTokens: 0,
      outputTokens: 0,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      ...fields,
    },
    NOW,
    { source },
  );
  if (!v.ok) throw new Error(v.reason);
  return v.row;
}

/** One collection's four token points of a model, as the mapping makes them. */
const points = (extra: Partial<IncomingEvent> = {}, id = "p") => [
  row({ ...extra, inputTokens: 1000, eventId: `${id}-input` }),
  row({ ...extra, outputTokens: 300, eventId: `${id}-output` }),
  row({ ...extra, cacheReadTokens: 5000, eventId: `${id}-cacheRead` }),
  row({ ...extra, cacheWriteTokens: 700, eventId: `${id}-cacheCreation` }),
];

const counts = (r: EventRow) => [r.inputTokens, r.outputTokens, r.cacheReadTokens, r.cacheWriteTokens];

describe("mergeUsagePoints", () => {
  it("folds one collection's four points into one row of their counts, in the first's place", () => {
    const before = row({ type: "git_commit" });
    const after = row({ type: "git_commit", eventId: "after" });
    const rows = [before, ...points(), after];
    const copies = rows.map((r) => ({ ...r }));
    const merged = mergeUsagePoints(rows);
    expect(merged).toHaveLength(3);
    expect(merged[0]).toBe(before);
    expect(counts(merged[1]!)).toEqual([1000, 300, 5000, 700]);
    expect(merged[1]!.eventId).toBe("p-input");
    expect(merged[2]).toBe(after);
    // The rows given are not changed: the store prepares them again when some claims fail.
    expect(rows).toEqual(copies);
  });

  it("keeps apart what differs in anything but the counts", () => {
    const differing: Partial<IncomingEvent>[] = [
      { time: "2026-03-02T10:00:00.124Z" },
      { orgId: "org_2" },
      { userId: "user_2" },
      { userEmail: "b@example.test" },
      { userEmail: undefined },
      { sessionId: "s2" },
      { sessionId: undefined },
      { sessionId: "n" },
      { client: "web" },
      { modelId: "claude-opus-4-1" },
      { modelTier: "thinking" },
    ];
    const rows = differing.flatMap((d, i) => points(d, `d${i}`));
    const merged = mergeUsagePoints(rows);
    expect(merged).toHaveLength(differing.length);
    for (const r of merged) expect(counts(r)).toEqual([1000, 300, 5000, 700]);
  });

  it("never folds rows of different owners, however they are interleaved", () => {
    // Two users' points of one session, time and model, in turns: each user's counts stay theirs.
    const a = points({ userId: "user_1" }, "a");
    const b = points({ userId: "user_2", userEmail: "b@example.test" }, "b");
    const merged = mergeUsagePoints(a.flatMap((r, i) => [r, b[i]!]));
    for (const user of ["user_1", "user_2"]) {
      const theirs = merged.filter((r) => r.userId === user);
      const sum = (f: (r: EventRow) => number | null) => theirs.reduce((n, r) => n + (f(r) ?? 0), 0);
      expect([sum((r) => r.inputTokens), sum((r) => r.outputTokens), sum((r) => r.cacheReadTokens)]).toEqual([
        1000, 300, 5000,
      ]);
      expect(sum((r) => r.cacheWriteTokens)).toBe(700);
    }
  });

  it("folds the collection's cost point in: the row's tokens carry the cost reported for them", () => {
    const merged = mergeUsagePoints([...points(), row({ costUsd: 0.25, eventId: "p-cost" })]);
    expect(merged).toHaveLength(1);
    expect(counts(merged[0]!)).toEqual([1000, 300, 5000, 700]);
    expect(merged[0]!.costUsd).toBe(0.25);
    // Two costs add up; token points alone keep no cost (null: not reported).
    expect(mergeUsagePoints([row({ costUsd: 0.25 }), row({ costUsd: 0.5 })]).map((r) => r.costUsd)).toEqual([0.75]);
    expect(mergeUsagePoints(points()).map((r) => r.costUsd)).toEqual([null]);
    // Never past what validation takes of one cost.
    expect(mergeUsagePoints([row({ costUsd: MAX_COST_USD }), row({ costUsd: 1 })]).map((r) => r.costUsd)).toEqual([
      MAX_COST_USD,
      1,
    ]);
  });

  it("leaves native rows, log records' rows and other types as they are", () => {
    const apart = [
      row({ inputTokens: 1 }, "native"),
      row({ inputTokens: 2 }, "native"),
      row({ inputTokens: 3 }, "otlp_log"),
      row({ inputTokens: 4 }, "otlp_log"),
      row({ inputTokens: 0, costUsd: 0.25 }, "otlp_log"),
      row({ inputTokens: 0, costUsd: 0.25 }, "otlp_log"),
      row({ type: "git_commit" }),
      row({ type: "git_commit" }),
    ];
    expect(mergeUsagePoints(apart)).toEqual(apart);
    // The same array when nothing is to fold: no copy for a batch without OTLP token points.
    expect(mergeUsagePoints(apart)).toBe(apart);
  });

  it("adds repeated points of one type, and never past MAX_TOKENS in a count", () => {
    const merged = mergeUsagePoints([
      row({ inputTokens: 10 }),
      row({ inputTokens: 20 }),
      row({ inputTokens: MAX_TOKENS }),
      row({ inputTokens: 5, outputTokens: 7 }),
    ]);
    // 10 + 20 fold; MAX_TOKENS would pass the bound with them, so it starts a row of its own,
    // which the last one can no longer join either (it is keyed to the latest row).
    expect(merged.map(counts)).toEqual([
      [30, 0, 0, 0],
      [MAX_TOKENS, 0, 0, 0],
      [5, 7, 0, 0],
    ]);
  });
});
