import { describe, expect, it } from "vitest";
import { readReportJson } from "./report-json.js";

describe("readReportJson", () => {
  it("reads every §2.7 field", () => {
    const { report, problems } = readReportJson({
      reportId: "3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d",
      createdAt: 1767225600000,
      repoUrl: "git@github.com:acme/w.git",
      apps: { ".": { description: "root" } },
      report: { readme: { numerator: 1, denominator: 1, rationale: "ok", appPaths: ["."] } },
      commitHash: "abc123",
      branch: "main",
      hasLocalChanges: true,
      hasNonRemoteCommits: false,
      modelUsed: { id: "m", reasoningEffort: "high" },
      droidVersion: "0.1.0",
      score: 1,
      changesSincePrevious: [],
    });
    expect(problems).toEqual([]);
    expect(report).toMatchObject({
      reportId: "3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d",
      createdAt: 1767225600000,
      repoUrl: "git@github.com:acme/w.git",
      commitHash: "abc123",
      branch: "main",
      hasLocalChanges: true,
      hasNonRemoteCommits: false,
      modelUsed: { id: "m", reasoningEffort: "high" },
      droidVersion: "0.1.0",
    });
    expect(report.apps["."]?.description).toBe("root");
    expect(report.report.readme).toMatchObject({ numerator: 1, denominator: 1, rationale: "ok", appPaths: ["."] });
    // Computed fields are ignored, not read.
    expect(report.score).toBeUndefined();
  });

  it("treats absent and null optional fields alike", () => {
    const { report, problems } = readReportJson({
      repoUrl: "https://h.io/a/b",
      apps: {},
      report: {},
      branch: null,
      modelUsed: null,
    });
    expect(problems).toEqual([]);
    expect(report.branch).toBeUndefined();
    expect(report.modelUsed).toBeUndefined();
    expect(report.reportId).toBe("");
    expect(report.createdAt).toBe(0);
  });

  it("names every type problem", () => {
    const { problems } = readReportJson({
      createdAt: "yesterday",
      apps: { web: "site" },
      report: { a: { numerator: "1", rationale: 5, appPaths: [1] }, b: [] },
      hasLocalChanges: "no",
      modelUsed: { id: 1 },
      extra: true,
    });
    expect(problems.map((p) => p.field)).toEqual([
      "extra",
      "createdAt",
      "repoUrl",
      "hasLocalChanges",
      "apps.web",
      "report.a.numerator",
      "report.a.denominator",
      "report.a.rationale",
      "report.a.appPaths[0]",
      "report.b",
      "modelUsed.id",
      "modelUsed.reasoningEffort",
    ]);
    expect(problems.find((p) => p.field === "report.a.denominator")?.problem).toBe("is required");
    expect(problems.find((p) => p.field === "createdAt")?.problem).toBe("must be a number, got a string");
  });

  it("refuses a document that is not an object", () => {
    expect(readReportJson([1]).problems).toEqual([
      { field: "(report)", problem: "must be a JSON object, got an array" },
    ]);
  });
});
