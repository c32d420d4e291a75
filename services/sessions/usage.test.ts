// Token usage of session trees: own + children's inclusive usage, computed from stored numbers.
import { describe, expect, it } from "vitest";
import { ZERO_USAGE } from "./settings.js";
import { computeUsage, type UsageNode } from "./usage.js";

const u = (inputTokens: number, outputTokens = 0) => ({ ...ZERO_USAGE, inputTokens, outputTokens });
const node = (
  id: string,
  parentId: string | null,
  own: ReturnType<typeof u>,
  reported: Record<string, ReturnType<typeof u>> = {},
): UsageNode => ({ id, parentId, own, reported });

describe("computeUsage", () => {
  it("adds children's inclusive usage, recursively, keyed by child ID", () => {
    const usage = computeUsage([
      node("root", null, u(100, 10)),
      node("child", "root", u(20, 2)),
      node("grandchild", "child", u(3, 1)),
      node("other", null, u(7)),
    ]);
    expect(usage.get("grandchild")!.inclusive).toEqual(u(3, 1));
    expect(usage.get("child")!.inclusive).toEqual(u(23, 3));
    expect(usage.get("child")!.children).toEqual({ grandchild: u(3, 1) });
    expect(usage.get("root")).toEqual({ own: u(100, 10), inclusive: u(123, 13), children: { child: u(23, 3) } });
    expect(usage.get("other")).toEqual({ own: u(7), inclusive: u(7), children: {} });
  });

  it("counts reported children, but never a reported entry for a child it holds", () => {
    const usage = computeUsage([
      node("root", null, u(1), { external: u(50), child: u(999) }),
      node("child", "root", u(5)),
    ]);
    expect(usage.get("root")!.children).toEqual({ external: u(50), child: u(5) });
    expect(usage.get("root")!.inclusive).toEqual(u(56));
  });

  it("ignores reported entries naming the session itself, an ancestor or another member of its tree (stored before writes refused them)", () => {
    const usage = computeUsage([
      node("root", null, u(1)),
      node("child", "root", u(5), {
        child: u(100),
        root: u(200),
        sibling: u(300),
        grandchild: u(400),
        external: u(7),
        other: u(8),
      }),
      node("sibling", "root", u(10)),
      node("grandchild", "child", u(2)),
      node("other", null, u(50)),
    ]);
    // Only the held grandchild and the client-side entries count; another tree's session is an
    // entry like any client-side one (it is not part of this tree's usage).
    expect(usage.get("child")!.children).toEqual({ grandchild: u(2), external: u(7), other: u(8) });
    expect(usage.get("child")!.inclusive).toEqual(u(22));
    expect(usage.get("root")!.inclusive).toEqual(u(1 + 22 + 10));
  });

  it("ignores a parent outside the given set", () => {
    const usage = computeUsage([node("child", "not-loaded", u(4))]);
    expect(usage.get("child")!.inclusive).toEqual(u(4));
  });
});
