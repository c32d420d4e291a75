// The two readiness services through an in-memory router transport, over a real test database.
import { Code, createClient, type Client, type ConnectRouter } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handlerTransport, rejection } from "../../test/support/handlers.js";
import { ReadinessService, ReportSubmissionService } from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { createOrganization } from "../organization/queries.js";
import { newId } from "../platform/ids.js";
import { createReadinessService, createReportSubmissionService } from "./handlers.js";

const T0 = Date.UTC(2026, 0, 20);

function criterion(numerator: number, denominator = 2) {
  return { numerator, denominator, rationale: `${numerator} of ${denominator}` };
}

describe("readiness handlers", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  let otherOrgId: string;
  let reports: Client<typeof ReadinessService>;
  let otherReports: Client<typeof ReadinessService>;
  let submission: Client<typeof ReportSubmissionService>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    orgId = (await createOrganization(database.db, { name: "Readiness A" })).id;
    otherOrgId = (await createOrganization(database.db, { name: "Readiness B" })).id;
    const deps = { db: database.db };
    const routes = (router: ConnectRouter) => {
      router.service(ReadinessService, createReadinessService(deps));
      router.service(ReportSubmissionService, createReportSubmissionService(deps));
    };
    const transportFor = (org: string) => handlerTransport(routes, { orgId: org, userId: "u", role: "member" });
    reports = createClient(ReadinessService, transportFor(orgId));
    otherReports = createClient(ReadinessService, transportFor(otherOrgId));
    // As an unbound service account: it submits for both organizations.
    submission = createClient(ReportSubmissionService, handlerTransport(routes));
  });
  afterAll(() => database?.drop());

  const ids: Record<string, string> = {};

  it("stores reports, one repository per normalized URL", async () => {
    const a1 = await submission.submitReport({
      orgId,
      report: {
        repoUrl: "https://github.com/acme/api.git",
        createdAt: T0,
        apps: {},
        report: { readme: criterion(0, 1), tests: criterion(1) },
      },
    });
    const a2 = await submission.submitReport({
      orgId,
      report: {
        repoUrl: "git@github.com:acme/api",
        createdAt: T0 + 1000,
        report: { readme: criterion(1, 1), tests: criterion(1) },
      },
    });
    const b1 = await submission.submitReport({
      orgId,
      report: { repoUrl: "https://github.com/acme/web", createdAt: T0 + 1000, report: { lint: criterion(2) } },
    });
    expect(a2.repoId).toBe(a1.repoId);
    expect(b1.repoId).not.toBe(a1.repoId);
    Object.assign(ids, { a1: a1.reportId, a2: a2.reportId, b1: b1.reportId, repoA: a1.repoId, repoB: b1.repoId });

    const { repositories } = await submission.listRepositories({ orgId });
    expect(repositories.map((r) => [r.url, r.reportCount, r.latestReport?.reportId])).toEqual([
      ["https://github.com/acme/api", 2, a2.reportId],
      ["https://github.com/acme/web", 1, b1.reportId],
    ]);
    // Another organization with the same URL gets its own record.
    const other = await submission.submitReport({
      orgId: otherOrgId,
      report: { repoUrl: "https://github.com/acme/api", createdAt: T0, report: { readme: criterion(1, 1) } },
    });
    expect(other.repoId).not.toBe(a1.repoId);
    ids.otherReport = other.reportId;
  });

  it("lists newest first, ties by reportId descending, with score and changes", async () => {
    const { reports: list } = await reports.listReports({});
    const tied = [ids.a2!, ids.b1!].sort().reverse();
    expect(list.map((r) => r.reportId)).toEqual([...tied, ids.a1!]);
    const a2 = list.find((r) => r.reportId === ids.a2)!;
    expect(a2.score).toBeCloseTo(2 / 3);
    expect(a2.changesSincePrevious.map((c) => ({ ...c, $typeName: undefined }))).toEqual([
      {
        $typeName: undefined,
        criterionId: "readme",
        previousNumerator: 0,
        previousDenominator: 1,
        numerator: 1,
        denominator: 1,
      },
    ]);
    expect(list.find((r) => r.reportId === ids.a1)!.changesSincePrevious).toEqual([]);
  });

  it("filters by repository and pages with startAfter", async () => {
    const onlyA = await reports.listReports({ repoId: ids.repoA });
    expect(onlyA.reports.map((r) => r.reportId)).toEqual([ids.a2, ids.a1]);
    const first = await reports.listReports({ limit: 1 });
    const second = await reports.listReports({ limit: 1, startAfter: first.reports[0]!.reportId });
    const third = await reports.listReports({ limit: 1, startAfter: second.reports[0]!.reportId });
    const end = await reports.listReports({ limit: 1, startAfter: third.reports[0]!.reportId });
    expect([first, second, third].map((p) => p.reports[0]!.reportId).sort()).toEqual([ids.a1, ids.a2, ids.b1].sort());
    expect(end.reports).toEqual([]);
  });

  it("keeps organizations apart: another organization's report and repository are unknown", async () => {
    const mine = await otherReports.listReports({});
    expect(mine.reports.map((r) => r.reportId)).toEqual([ids.otherReport]);
    for (const req of [{ startAfter: ids.a1 }, { repoId: ids.repoA }]) {
      const err = await rejection(otherReports.listReports(req));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toMatch(/^(startAfter|repoId): no (report|repository) with ID/);
    }
  });

  it("rejects out-of-range limits and malformed IDs", async () => {
    for (const [req, field] of [
      [{ limit: 0 }, "limit"],
      [{ limit: -1 }, "limit"],
      [{ limit: 101 }, "limit"],
      [{ startAfter: "nope" }, "startAfter"],
      [{ startAfter: "00000000-0000-4000-8000-000000000000" }, "startAfter"],
      [{ repoId: "nope" }, "repoId"],
    ] as const) {
      const err = await rejection(reports.listReports(req));
      expect(err.code, JSON.stringify(req)).toBe(Code.InvalidArgument);
      expect(err.rawMessage.startsWith(`${field}: `)).toBe(true);
    }
    expect((await reports.listReports({ limit: 100 })).reports.length).toBe(3);
  });

  it("rejects a bad report whole, listing every problem, and stores nothing", async () => {
    const before = (await reports.listReports({ limit: 100 })).reports.length;
    const err = await rejection(
      submission.submitReport({
        orgId,
        report: {
          reportId: "x",
          repoUrl: "https://github.com/acme/new-repo",
          report: { a: criterion(3, 2), b: { numerator: 0, denominator: 0, rationale: "" } },
          modelUsed: { id: "m", reasoningEffort: "max" },
        },
      }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage.split("; ").map((p) => p.split(":")[0])).toEqual([
      "reportId",
      "report.a.numerator",
      "report.b.denominator",
      "modelUsed.reasoningEffort",
    ]);
    expect((await reports.listReports({ limit: 100 })).reports.length).toBe(before);
    const repos = (await submission.listRepositories({ orgId })).repositories.map((r) => r.url);
    expect(repos).not.toContain("https://github.com/acme/new-repo");
  });

  it("refuses a duplicate reportId, a missing report and an unknown organization", async () => {
    const dup = await rejection(
      submission.submitReport({
        orgId,
        report: { reportId: ids.a1, repoUrl: "https://github.com/acme/api", report: { readme: criterion(1, 1) } },
      }),
    );
    expect(dup.code).toBe(Code.AlreadyExists);
    expect((await rejection(submission.submitReport({ orgId }))).code).toBe(Code.InvalidArgument);
    expect((await rejection(submission.submitReport({ orgId: "", report: {} }))).rawMessage).toMatch(/^orgId: /);
    const unknown = newId();
    expect(
      (
        await rejection(
          submission.submitReport({
            orgId: unknown,
            report: { repoUrl: "https://h.io/a/b", report: { x: criterion(1) } },
          }),
        )
      ).code,
    ).toBe(Code.NotFound);
    expect((await rejection(submission.listRepositories({ orgId: unknown }))).code).toBe(Code.NotFound);
  });
});
