import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ReadinessReportSchema, type ReadinessReport } from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import { formatProblems, MAX_LISTED_LENGTH, validateReport, type Problem } from "./validation.js";

const NOW = Date.UTC(2026, 2, 1, 12);

function report(overrides: Omit<MessageInitShape<typeof ReadinessReportSchema>, "$typeName"> = {}): ReadinessReport {
  return create(ReadinessReportSchema, {
    reportId: "3F2B8C1E-9A4D-4E7B-8C2F-1D5E6A7B8C9D",
    createdAt: NOW - 60_000,
    repoUrl: "https://token@github.com/Acme/Widgets.git",
    apps: { "apps/web": { description: "site" }, "apps/api": { description: "api" } },
    report: {
      lint_config: { numerator: 1, denominator: 2, rationale: "web lints", appPaths: ["apps/web", "apps/api"] },
      readme: { numerator: 1, denominator: 1, rationale: "present" },
    },
    ...overrides,
  });
}

const fields = (problems: Problem[]) => problems.map((p) => p.field);

describe("validateReport", () => {
  it("accepts a good report and gives its stored form", () => {
    const v = validateReport(
      report({ branch: "main", hasLocalChanges: false, modelUsed: { id: "m", reasoningEffort: "off" } }),
      NOW,
    );
    expect(v.ok).toBe(true);
    if (!v.ok) return;
    expect(v.report).toMatchObject({
      reportId: "3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d",
      createdAt: new Date(NOW - 60_000),
      repoUrl: "https://github.com/Acme/Widgets.git",
      repositoryUrl: "https://github.com/Acme/Widgets",
      branch: "main",
      commitHash: null,
      hasLocalChanges: false,
      hasNonRemoteCommits: null,
      modelId: "m",
      reasoningEffort: "off",
      droidVersion: null,
    });
    expect(v.report.criteria.lint_config).toEqual({
      numerator: 1,
      denominator: 2,
      rationale: "web lints",
      appPaths: ["apps/web", "apps/api"],
    });
    expect(v.report.criteria.readme).toEqual({ numerator: 1, denominator: 1, rationale: "present" });
  });

  it("generates a reportId and uses now for a missing createdAt", () => {
    const v = validateReport(report({ reportId: "", createdAt: 0 }), NOW, () => "11111111-2222-4333-8444-555555555555");
    expect(v.ok && v.report.reportId).toBe("11111111-2222-4333-8444-555555555555");
    expect(v.ok && v.report.createdAt.getTime()).toBe(NOW);
  });

  it("lists every problem of a bad report, each naming its field", () => {
    const v = validateReport(
      report({
        reportId: "not-a-uuid",
        createdAt: NOW + 86_400_000,
        repoUrl: "/home/me/repo",
        report: {
          zero: { numerator: 0, denominator: 0, rationale: "" },
          over: { numerator: 3, denominator: 2, rationale: "" },
          negative: { numerator: -1, denominator: 1, rationale: "" },
          fraction: { numerator: 0.5, denominator: 1, rationale: "" },
          "ci.pipeline": { numerator: 1, denominator: 2, rationale: "", appPaths: ["apps/web", "apps/missing"] },
          twice: { numerator: 1, denominator: 2, rationale: "", appPaths: ["apps/web", "apps/web"] },
          count: { numerator: 1, denominator: 1, rationale: "", appPaths: ["apps/web", "apps/api"] },
        },
        modelUsed: { id: "", reasoningEffort: "extreme" },
        branch: "bad\u0000branch",
      }),
      NOW,
    );
    expect(v.ok).toBe(false);
    if (v.ok) return;
    expect(fields(v.problems)).toEqual([
      "reportId",
      "createdAt",
      "repoUrl",
      "report.zero.denominator",
      "report.over.numerator",
      "report.negative.numerator",
      "report.fraction.numerator",
      'report["ci.pipeline"].appPaths[1]',
      "report.twice.appPaths[1]",
      "report.count.appPaths",
      "modelUsed.id",
      "modelUsed.reasoningEffort",
      "branch",
    ]);
    const message = formatProblems(v.problems);
    expect(message).toMatch(/^reportId: must be a UUID/);
    expect(message).toContain("report.zero.denominator: must be at least 1, got 0");
    expect(message).toContain("report.over.numerator: must not exceed the denominator (2), got 3");
    expect(message).toContain("modelUsed.reasoningEffort: must be one of low, medium, high, off");
    expect(message).toContain('report["ci.pipeline"].appPaths[1]: "apps/missing" is not a key of apps');
  });

  it("lists problems in the message up to MAX_LISTED_LENGTH, then counts the rest", () => {
    const problems: Problem[] = Array.from({ length: 500 }, (_, i) => ({
      field: `report.c${i}.denominator`,
      problem: "must be at least 1, got 0",
    }));
    const message = formatProblems(problems);
    const listed = message.split("; ").filter((p) => p.startsWith("report."));
    expect(message.length).toBeLessThanOrEqual(MAX_LISTED_LENGTH + "; and 500 more problems".length);
    expect(listed[0]).toBe("report.c0.denominator: must be at least 1, got 0");
    expect(message.endsWith(`; and ${500 - listed.length} more problems`)).toBe(true);
    expect(formatProblems(problems.slice(0, 3))).toBe(
      problems
        .slice(0, 3)
        .map((p) => `${p.field}: ${p.problem}`)
        .join("; "),
    );
    // One over: "1 more problem".
    const fit = listed.length;
    expect(formatProblems(problems.slice(0, fit + 1)).endsWith("; and 1 more problem")).toBe(true);
  });

  it("requires a repoUrl and at least one criterion", () => {
    const v = validateReport(report({ repoUrl: "", report: {} }), NOW);
    expect(!v.ok && fields(v.problems)).toEqual(["repoUrl", "report"]);
  });

  it("accepts every known reasoningEffort", () => {
    for (const effort of ["low", "medium", "high", "off"]) {
      expect(validateReport(report({ modelUsed: { id: "m", reasoningEffort: effort } }), NOW).ok, effort).toBe(true);
    }
  });
});
