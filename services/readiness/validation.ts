// Validation of a submitted report (SubmitReport and `agentplane readiness submit`). Every
// problem is collected, so a bad report is rejected once with all of them (the message lists as
// many as fit, then counts the rest), and a valid report comes out in the form it is stored in.
import { randomUUID } from "node:crypto";
import type { ReadinessReport } from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import { item, member } from "./field-path.js";
import { normalizeRepoUrl, withoutCredentials } from "./repo-url.js";
import type { StoredApps, StoredCriteria, StoredCriterion } from "./tables.js";

export const REASONING_EFFORTS = ["low", "medium", "high", "off"] as const;

// Bounds that keep one report a reasonable row; generous for real evaluations.
export const MAX_CRITERIA = 1_000;
export const MAX_APPS = 1_000;
export const MAX_KEY_LENGTH = 1_024;
export const MAX_TEXT_LENGTH = 20_000;
export const MAX_SHORT_LENGTH = 2_048;
/** Clock skew tolerated for a createdAt slightly ahead of ours. */
export const FUTURE_SKEW_MS = 5 * 60_000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: string): boolean => UUID.test(value);

/** A report that passed validation, as it is stored. */
export interface ValidReport {
  /** Lower-case UUID. */
  reportId: string;
  createdAt: Date;
  /** As submitted, credentials removed. */
  repoUrl: string;
  /** Normalized URL: the repository record's key. */
  repositoryUrl: string;
  apps: StoredApps;
  criteria: StoredCriteria;
  commitHash: string | null;
  branch: string | null;
  hasLocalChanges: boolean | null;
  hasNonRemoteCommits: boolean | null;
  modelId: string | null;
  reasoningEffort: string | null;
  droidVersion: string | null;
}

/** One thing wrong with a report: the field's path in JSON spelling, and what is wrong. */
export interface Problem {
  field: string;
  problem: string;
}

export type Validation = { ok: true; report: ValidReport } | { ok: false; problems: Problem[] };

/** Longest list formatProblems writes before it counts the rest (errors.ts bounds every message). */
export const MAX_LISTED_LENGTH = 900;

/**
 * "field: problem; field: problem" — the message starts with the first field, as every 400 does.
 * A report can hold thousands of problems (1 000 criteria, each wrong in several ways): the
 * message lists them up to MAX_LISTED_LENGTH characters, then says how many more there are.
 */
export function formatProblems(problems: readonly Problem[]): string {
  const parts = problems.map((p) => `${p.field}: ${p.problem}`);
  let out = parts[0] ?? "";
  let listed = parts.length === 0 ? 0 : 1;
  while (listed < parts.length && out.length + 2 + parts[listed]!.length <= MAX_LISTED_LENGTH)
    out += `; ${parts[listed++]}`;
  const more = parts.length - listed;
  return more === 0 ? out : `${out}; and ${more} more problem${more === 1 ? "" : "s"}`;
}

class Problems {
  readonly list: Problem[] = [];
  add(field: string, problem: string): void {
    this.list.push({ field, problem });
  }
  /** Checks a string's length and that Postgres can store it (text and jsonb refuse U+0000). */
  text(field: string, value: string, max: number, { nonEmpty = false } = {}): void {
    if (nonEmpty && value.trim() === "") this.add(field, "must not be empty");
    if (value.length > max) this.add(field, `must be at most ${max} characters, got ${value.length}`);
    if (value.includes("\u0000")) this.add(field, "must not contain the NUL character");
  }
}

function wholeNumberProblem(value: number): string | undefined {
  if (!Number.isFinite(value)) return `must be a number, got ${value}`;
  if (!Number.isSafeInteger(value)) return `must be a whole number, got ${value}`;
  return undefined;
}

function checkCriterion(
  p: Problems,
  path: string,
  c: ReadinessReport["report"][string],
  apps: StoredApps,
): StoredCriterion {
  const numeratorPath = member(path, "numerator");
  const denominatorPath = member(path, "denominator");
  const denominatorBad = wholeNumberProblem(c.denominator);
  if (denominatorBad) p.add(denominatorPath, denominatorBad);
  else if (c.denominator < 1) p.add(denominatorPath, `must be at least 1, got ${c.denominator}`);
  const numeratorBad = wholeNumberProblem(c.numerator);
  if (numeratorBad) p.add(numeratorPath, numeratorBad);
  else if (c.numerator < 0) p.add(numeratorPath, `must be at least 0, got ${c.numerator}`);
  else if (!denominatorBad && c.denominator >= 1 && c.numerator > c.denominator) {
    p.add(numeratorPath, `must not exceed the denominator (${c.denominator}), got ${c.numerator}`);
  }
  p.text(member(path, "rationale"), c.rationale, MAX_TEXT_LENGTH);

  // How a criterion refers to apps (see CriterionEvaluation.app_paths in the proto).
  const appPathsPath = member(path, "appPaths");
  const seen = new Set<string>();
  for (const [i, appPath] of c.appPaths.entries()) {
    if (!Object.hasOwn(apps, appPath))
      p.add(item(appPathsPath, i), `${JSON.stringify(appPath.slice(0, 200))} is not a key of apps`);
    else if (seen.has(appPath))
      p.add(item(appPathsPath, i), `${JSON.stringify(appPath.slice(0, 200))} is listed twice`);
    seen.add(appPath);
  }
  if (c.appPaths.length > 0 && !denominatorBad && c.appPaths.length !== c.denominator) {
    p.add(
      appPathsPath,
      `names ${c.appPaths.length} applications but the denominator counts ${c.denominator}; list exactly the applications evaluated`,
    );
  }
  return {
    numerator: c.numerator,
    denominator: c.denominator,
    rationale: c.rationale,
    ...(c.appPaths.length > 0 ? { appPaths: [...c.appPaths] } : {}),
  };
}

function optionalText(p: Problems, field: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  p.text(field, value, MAX_SHORT_LENGTH);
  return value;
}

/**
 * Validates a report. `now` decides a missing createdAt and the "not in the future" bound;
 * `newId` makes the reportId when the report has none.
 */
export function validateReport(report: ReadinessReport, now: number, newId: () => string = randomUUID): Validation {
  const p = new Problems();

  let reportId = report.reportId.trim();
  if (reportId === "") reportId = newId();
  else if (!isUuid(reportId))
    p.add(
      "reportId",
      `must be a UUID such as 3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d, got ${JSON.stringify(report.reportId.slice(0, 60))}`,
    );

  let createdAt = report.createdAt;
  if (createdAt === 0) createdAt = now;
  else {
    const bad = wholeNumberProblem(createdAt);
    if (bad) p.add("createdAt", `${bad} (Unix milliseconds)`);
    else if (createdAt < 0) p.add("createdAt", `must be Unix milliseconds after 1970, got ${createdAt}`);
    else if (createdAt > now + FUTURE_SKEW_MS)
      p.add("createdAt", `must not be in the future, got ${new Date(createdAt).toISOString()}`);
  }

  let repositoryUrl: string | undefined;
  if (report.repoUrl.trim() === "") p.add("repoUrl", "is required");
  else {
    p.text("repoUrl", report.repoUrl, MAX_SHORT_LENGTH);
    repositoryUrl = normalizeRepoUrl(report.repoUrl);
    if (repositoryUrl === undefined) {
      p.add(
        "repoUrl",
        `must be a remote repository URL such as https://github.com/owner/repo or git@github.com:owner/repo, got ${JSON.stringify(report.repoUrl.slice(0, 200))}`,
      );
    }
  }

  const appEntries = Object.entries(report.apps);
  if (appEntries.length > MAX_APPS)
    p.add("apps", `must have at most ${MAX_APPS} applications, got ${appEntries.length}`);
  for (const [path, app] of appEntries) {
    const appPath = member("apps", path);
    if (path.trim() === "") p.add(appPath, "application path must not be empty");
    p.text(`${appPath} (the key)`, path, MAX_KEY_LENGTH);
    p.text(member(appPath, "description"), app.description, MAX_TEXT_LENGTH);
  }
  // fromEntries defines own properties, so even a key such as "__proto__" stays a plain key.
  const apps: StoredApps = Object.fromEntries(
    appEntries.map(([path, app]) => [path, { description: app.description }]),
  );

  const criterionEntries = Object.entries(report.report);
  if (criterionEntries.length === 0) p.add("report", "must evaluate at least one criterion");
  if (criterionEntries.length > MAX_CRITERIA)
    p.add("report", `must have at most ${MAX_CRITERIA} criteria, got ${criterionEntries.length}`);
  const criteria: StoredCriteria = Object.fromEntries(
    criterionEntries.map(([id, evaluation]) => {
      const path = member("report", id);
      if (id.trim() === "") p.add(path, "criterion ID must not be empty");
      p.text(`${path} (the key)`, id, MAX_KEY_LENGTH);
      return [id, checkCriterion(p, path, evaluation, apps)];
    }),
  );

  let modelId: string | null = null;
  let reasoningEffort: string | null = null;
  if (report.modelUsed) {
    modelId = report.modelUsed.id;
    reasoningEffort = report.modelUsed.reasoningEffort;
    p.text("modelUsed.id", modelId, MAX_SHORT_LENGTH, { nonEmpty: true });
    if (!(REASONING_EFFORTS as readonly string[]).includes(reasoningEffort)) {
      p.add(
        "modelUsed.reasoningEffort",
        `must be one of ${REASONING_EFFORTS.join(", ")}, got ${JSON.stringify(reasoningEffort.slice(0, 60))}`,
      );
    }
  }

  const commitHash = optionalText(p, "commitHash", report.commitHash);
  const branch = optionalText(p, "branch", report.branch);
  const droidVersion = optionalText(p, "droidVersion", report.droidVersion);

  if (p.list.length > 0 || repositoryUrl === undefined) return { ok: false, problems: p.list };
  return {
    ok: true,
    report: {
      reportId: reportId.toLowerCase(),
      createdAt: new Date(createdAt),
      repoUrl: withoutCredentials(report.repoUrl),
      repositoryUrl,
      apps,
      criteria,
      commitHash,
      branch,
      hasLocalChanges: report.hasLocalChanges ?? null,
      hasNonRemoteCommits: report.hasNonRemoteCommits ?? null,
      modelId,
      reasoningEffort,
      droidVersion,
    },
  };
}
