// Readiness reports end to end: reports submitted over gRPC by a @grpc/grpc-js client (the
// internal ReportSubmissionService) and read through the REST edge at
// GET /api/organization/maturity-level-reports with an API key.
import { randomUUID } from "node:crypto";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReadinessService, ReportSubmissionService } from "../gen/agentplane/readiness/v1/readiness_pb.js";
import {
  api,
  createTestOrg,
  createTestUser,
  type TestUser,
  bearer,
  createTestServiceAccount,
} from "./support/fixtures.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { startTestServer, type TestServer } from "./support/server.js";

const PATH = "/api/organization/maturity-level-reports";
const JWT_SECRET = "readiness-test-secret-0123456789abcdef";
const HOUR = 3_600_000;
const BASE = Date.now() - 30 * 24 * HOUR;

function expectErrorBody(res: { status: number; headers: Headers; json: any }, status: number) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  expect(res.json).toEqual({
    title: expect.any(String),
    detail: expect.any(String),
    status,
    requestId: expect.any(String),
  });
  expect(res.json.requestId).toBe(res.headers.get("x-request-id"));
}

/** A complete §2.7 report in its JSON form, every optional field present. */
function fullReport(createdAt: number) {
  return {
    reportId: randomUUID(),
    createdAt,
    repoUrl: "https://github.com/acme/monorepo",
    apps: {
      "apps/web": { description: "Next.js site" },
      "apps/api": { description: "Go API" },
      "packages/ui": { description: "" },
    },
    report: {
      lint_config: {
        numerator: 2,
        denominator: 3,
        rationale: "packages/ui has no linter",
        appPaths: ["apps/web", "apps/api", "packages/ui"],
      },
      readme: { numerator: 1, denominator: 1, rationale: "README explains setup" },
      "unit.tests": { numerator: 0, denominator: 2, rationale: "no tests yet" },
    },
    commitHash: "9fceb02d0ae598e95dc970b74767f19372d61af8",
    branch: "feature/readiness",
    hasLocalChanges: false,
    hasNonRemoteCommits: true,
    modelUsed: { id: "claude-sonnet-4-5", reasoningEffort: "medium" },
    droidVersion: "0.22.3",
  };
}

describe("readiness reports end to end", () => {
  let server: TestServer;
  let owner: TestUser;
  let guest: TestUser;
  let other: TestUser;
  let submission: GrpcCaller;
  /** Every report of the owner's organization: [reportId, createdAt, repoId]. */
  const stored: Array<{ reportId: string; createdAt: number; repoId: string }> = [];

  const submit = (orgId: string, report: Record<string, unknown>) =>
    submission.call(ReportSubmissionService.method.submitReport, { orgId, report: report as never });

  beforeAll(async () => {
    server = await startTestServer({ JWT_SECRET });
    const db = server.platform.db;
    const orgId = await createTestOrg(db, "Readiness");
    owner = await createTestUser(db, orgId, "owner");
    guest = await createTestUser(db, orgId, "guest");
    other = await createTestUser(db, await createTestOrg(db, "Elsewhere"), "owner");
    submission = grpcClient(
      ReportSubmissionService,
      server.internalGrpcUrl,
      bearer(await createTestServiceAccount(server.platform.db)),
    );

    // Three repositories, one written three ways; two pairs of reports share a createdAt, so
    // the order has to fall back on reportId.
    const plan: Array<[string, number]> = [
      ["https://github.com/acme/api.git", BASE],
      ["git@github.com:acme/api.git", BASE + HOUR],
      ["https://github.com/acme/web", BASE + HOUR],
      ["https://token@github.com/acme/api/", BASE + 2 * HOUR],
      ["https://github.com/acme/web", BASE + 3 * HOUR],
      ["https://gitlab.com/acme/tools", BASE + 3 * HOUR],
      ["https://gitlab.com/acme/tools", BASE + 4 * HOUR],
    ];
    for (const [i, [repoUrl, createdAt]] of plan.entries()) {
      const res = await submit(orgId, {
        repoUrl,
        createdAt,
        report: { ci: { numerator: i % 3, denominator: 2, rationale: `run ${i}` } },
      });
      stored.push({ reportId: res.reportId, createdAt, repoId: res.repoId });
    }
    await submit(other.orgId, {
      repoUrl: "https://github.com/acme/api",
      createdAt: BASE,
      report: { ci: { numerator: 1, denominator: 1, rationale: "" } },
    });
  });
  afterAll(async () => {
    submission?.close();
    await server?.close();
  });

  const newestFirst = (list: typeof stored) =>
    [...list]
      .sort((a, b) => b.createdAt - a.createdAt || (a.reportId < b.reportId ? 1 : a.reportId > b.reportId ? -1 : 0))
      .map((r) => r.reportId);

  it("keeps one repository per normalized URL", () => {
    expect(new Set(stored.map((r) => r.repoId)).size).toBe(3);
    expect(stored[0]!.repoId).toBe(stored[1]!.repoId);
    expect(stored[0]!.repoId).toBe(stored[3]!.repoId);
  });

  it("pages with limit=1 and startAfter through every report exactly once, newest first", async () => {
    const seen: string[] = [];
    let startAfter = "";
    for (let page = 0; page <= stored.length; page++) {
      const res = await api(
        server.restUrl,
        owner.key,
        `${PATH}?limit=1${startAfter ? `&startAfter=${startAfter}` : ""}`,
      );
      expect(res.status).toBe(200);
      if (res.json.reports.length === 0) break;
      expect(res.json.reports).toHaveLength(1);
      startAfter = res.json.reports[0].reportId;
      seen.push(startAfter);
    }
    expect(seen).toEqual(newestFirst(stored));
    // One page with the default limit agrees.
    const all = await api(server.restUrl, owner.key, PATH);
    expect(all.json.reports.map((r: { reportId: string }) => r.reportId)).toEqual(seen);
  });

  it("with repoId pages through only that repository's reports", async () => {
    const repoId = stored[0]!.repoId;
    const seen: string[] = [];
    let startAfter = "";
    for (let page = 0; page <= stored.length; page++) {
      const res = await api(
        server.restUrl,
        owner.key,
        `${PATH}?repoId=${repoId}&limit=1${startAfter ? `&startAfter=${startAfter}` : ""}`,
      );
      expect(res.status).toBe(200);
      if (res.json.reports.length === 0) break;
      startAfter = res.json.reports[0].reportId;
      seen.push(startAfter);
    }
    expect(seen).toEqual(newestFirst(stored.filter((r) => r.repoId === repoId)));
    expect(seen).toHaveLength(3);
  });

  it("401 without a key, with a bad key and with a JWT the v0 endpoints accept", async () => {
    expectErrorBody(await api(server.restUrl, undefined, PATH), 401);
    expectErrorBody(await api(server.restUrl, "apk_not-a-real-key", PATH), 401);
    const jwt = await new SignJWT({ org_id: owner.orgId })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(owner.userId)
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(JWT_SECRET));
    // The token is good: a v0 endpoint accepts it...
    expect((await api(server.restUrl, jwt, "/api/v0/organization/users")).status).toBe(200);
    // ...but readiness takes API keys only.
    const res = await api(server.restUrl, jwt, PATH);
    expectErrorBody(res, 401);
    expect(res.json.detail).toMatch(/API key/);
  });

  it.each([
    ["limit=0", "limit"],
    ["limit=-1", "limit"],
    ["limit=abc", "limit"],
    ["limit=101", "limit"],
    [`startAfter=${randomUUID()}`, "startAfter"],
    ["startAfter=not-a-report", "startAfter"],
    [`repoId=${randomUUID()}`, "repoId"],
  ])("400 for %s, with the error body naming the parameter", async (query, field) => {
    const res = await api(server.restUrl, owner.key, `${PATH}?${query}`);
    expectErrorBody(res, 400);
    expect(res.json.detail).toMatch(new RegExp(field));
  });

  it("another organization's report or repository is unknown, and its reports are not listed", async () => {
    expectErrorBody(await api(server.restUrl, other.key, `${PATH}?startAfter=${stored[0]!.reportId}`), 400);
    expectErrorBody(await api(server.restUrl, other.key, `${PATH}?repoId=${stored[0]!.repoId}`), 400);
    const theirs = await api(server.restUrl, other.key, PATH);
    expect(theirs.json.reports).toHaveLength(1);
    expect(stored.map((r) => r.reportId)).not.toContain(theirs.json.reports[0].reportId);
  });

  it("a submitted report reads back field for field, createdAt a JSON number", async () => {
    const report = fullReport(BASE + 10 * HOUR);
    const res = await submit(owner.orgId, report);
    expect(res.reportId).toBe(report.reportId);
    const list = await api(server.restUrl, guest.key, `${PATH}?repoId=${res.repoId}`);
    expect(list.status).toBe(200);
    const got = list.json.reports[0];
    expect(got).toEqual({
      ...report,
      // The criteria's optional appPaths list prints empty where it was not given.
      report: Object.fromEntries(Object.entries(report.report).map(([id, c]) => [id, { appPaths: [], ...c }])),
      score: 3 / 6,
      changesSincePrevious: [],
    });
    expect(typeof got.createdAt).toBe("number");

    // The same repository again: the changes since the previous report.
    const next = fullReport(BASE + 11 * HOUR);
    next.report["unit.tests"].numerator = 2;
    const { lint_config: _dropped, ...rest } = next.report;
    await submit(owner.orgId, {
      ...next,
      report: { ...rest, docs: { numerator: 1, denominator: 1, rationale: "new" } },
    });
    const after = await api(server.restUrl, owner.key, `${PATH}?repoId=${res.repoId}&limit=1`);
    expect(after.json.reports[0].changesSincePrevious).toEqual([
      { criterionId: "docs", numerator: 1, denominator: 1 },
      { criterionId: "lint_config", previousNumerator: 2, previousDenominator: 3 },
      { criterionId: "unit.tests", previousNumerator: 0, previousDenominator: 2, numerator: 2, denominator: 2 },
    ]);
    expect(after.json.reports[0].score).toBe(1);
  });

  it("omits optional fields a report did not carry, and strips credentials from repoUrl", async () => {
    const repoA = (await api(server.restUrl, owner.key, `${PATH}?repoId=${stored[0]!.repoId}`)).json.reports;
    expect(repoA.map((r: { reportId: string }) => r.reportId)).toEqual([
      stored[3]!.reportId,
      stored[1]!.reportId,
      stored[0]!.reportId,
    ]);
    const minimal = repoA[2];
    expect(Object.keys(minimal).sort()).toEqual([
      "apps",
      "changesSincePrevious",
      "createdAt",
      "repoUrl",
      "report",
      "reportId",
      "score",
    ]);
    expect(minimal).toMatchObject({
      repoUrl: "https://github.com/acme/api.git",
      apps: {},
      createdAt: BASE,
      changesSincePrevious: [],
    });
    // Submitted as https://token@github.com/acme/api/ — everything but the token kept as sent.
    expect(repoA[0].repoUrl).toBe("https://github.com/acme/api/");
  });

  it("rejects an invalid report with all its problems named, and stores nothing", async () => {
    const before = (await api(server.restUrl, owner.key, `${PATH}?limit=100`)).json.reports.length;
    const bad = {
      ...fullReport(BASE),
      reportId: "report-1",
      repoUrl: "https://github.com/acme/never-stored",
      report: {
        lint: { numerator: 4, denominator: 3, rationale: "", appPaths: ["apps/web", "apps/gone", "apps/api"] },
        docs: { numerator: 0, denominator: 0, rationale: "" },
      },
      modelUsed: { id: "m", reasoningEffort: "maximum" },
    };
    const err = await submit(owner.orgId, bad).then(
      () => undefined,
      (e: { code: number; details: string }) => e,
    );
    expect(err?.code).toBe(3); // INVALID_ARGUMENT
    // connect-node percent-encodes grpc-message with encodeURIComponent; grpc-js undoes only
    // decodeURI's subset, so ":" and ";" arrive still encoded. Decoding fully is what the gRPC
    // spec's percent-decoding gives.
    const details = decodeURIComponent(err!.details);
    expect(details.split("; ").map((p) => p.slice(0, p.indexOf(":")))).toEqual([
      "reportId",
      "report.lint.numerator",
      "report.lint.appPaths[1]",
      "report.docs.denominator",
      "modelUsed.reasoningEffort",
    ]);
    expect((await api(server.restUrl, owner.key, `${PATH}?limit=100`)).json.reports.length).toBe(before);
    const { repositories } = await submission.call(ReportSubmissionService.method.listRepositories, {
      orgId: owner.orgId,
    });
    expect(repositories.map((r) => r.url)).not.toContain("https://github.com/acme/never-stored");
  });

  it("a report with a thousand bad criteria gets a bounded message, and the connection lives on", async () => {
    // Found by the RPC fuzzer: every problem went into grpc-message, 2 MB of trailers, and the
    // server's HTTP/2 session died (FRAME_SIZE_ERROR) with every call on it.
    const report = Object.fromEntries(
      Array.from({ length: 1000 }, (_, i) => [
        `criterion_${i}`,
        { numerator: 5, denominator: 0, rationale: "", appPaths: ["apps/gone"] },
      ]),
    );
    const err = await submit(owner.orgId, { ...fullReport(BASE), report }).then(
      () => undefined,
      (e: { code: number; details: string }) => e,
    );
    expect(err?.code).toBe(3); // INVALID_ARGUMENT
    const details = decodeURIComponent(err!.details);
    expect(details.length).toBeLessThanOrEqual(1024);
    expect(details).toMatch(/^report\.criterion_0\.denominator: must be at least 1, got 0; /);
    // 3 problems per criterion; the message lists what fits and counts the rest.
    const listed = details.match(/(?:^|; )report\.criterion_\d+\.\w+(?:\[\d+\])?: /g)!.length;
    expect(listed).toBeGreaterThan(1);
    expect(details).toMatch(new RegExp(`; and ${3000 - listed} more problems$`));
    // The same client (one HTTP/2 connection) goes on working.
    const { repositories } = await submission.call(ReportSubmissionService.method.listRepositories, {
      orgId: owner.orgId,
    });
    expect(repositories.length).toBeGreaterThan(0);
  });

  it("ListRepositories answers a @grpc/grpc-js client with each repository's latest report", async () => {
    const { repositories } = await submission.call(ReportSubmissionService.method.listRepositories, {
      orgId: owner.orgId,
    });
    const byUrl = Object.fromEntries(repositories.map((r) => [r.url, r]));
    expect(Object.keys(byUrl)).toEqual([
      "https://github.com/acme/api",
      "https://github.com/acme/monorepo",
      "https://github.com/acme/web",
      "https://gitlab.com/acme/tools",
    ]);
    expect(byUrl["https://github.com/acme/api"]!.reportCount).toBe(3);
    expect(byUrl["https://github.com/acme/api"]!.id).toBe(stored[0]!.repoId);
    expect(byUrl["https://github.com/acme/api"]!.latestReport?.reportId).toBe(stored[3]!.reportId);
    expect(byUrl["https://gitlab.com/acme/tools"]!.latestReport?.reportId).toBe(stored[6]!.reportId);
  });

  it("the public RPC over gRPC needs an API key too", async () => {
    const client = grpcClient(ReadinessService, server.grpcUrl);
    try {
      const res = await client.call(
        ReadinessService.method.listReports,
        { limit: 2 },
        { authorization: `Bearer ${owner.key}` },
      );
      expect(res.reports).toHaveLength(2);
      await expect(client.call(ReadinessService.method.listReports, {}, {})).rejects.toMatchObject({ code: 16 });
    } finally {
      client.close();
    }
  });
});
