// Repository functions of the readiness area. Each takes an Executor (db or transaction) and is
// scoped by organization.
import { newId } from "../platform/ids.js";
import { sql, type Selectable } from "kysely";
import type { Executor } from "../database.js";
import type { ReadinessReportsTable, ReadinessRepositoriesTable } from "./tables.js";
import type { ValidReport } from "./validation.js";

export type ReportRow = Selectable<ReadinessReportsTable>;

/** A report with the criteria of its repository's previous report (null for the first one). */
export type ReportWithPrevious = ReportRow & { previous_criteria: ReportRow["criteria"] | null };

export type RepositoryRow = Selectable<ReadinessRepositoriesTable>;

/** Keyset position in the report list (newest first by created_at, then id). */
export type ReportPosition = Pick<ReportRow, "created_at" | "id">;

/** The repository record for a normalized URL, created on first use. */
export async function ensureRepository(db: Executor, orgId: string, url: string): Promise<RepositoryRow> {
  // The no-op update makes the row come back whether it was inserted now or already existed.
  return db
    .insertInto("readiness_repositories")
    .values({ id: newId(), org_id: orgId, url })
    .onConflict((oc) => oc.columns(["org_id", "url"]).doUpdateSet({ url: (eb) => eb.ref("excluded.url") }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findRepository(
  db: Executor,
  orgId: string,
  repositoryId: string,
): Promise<RepositoryRow | undefined> {
  return db
    .selectFrom("readiness_repositories")
    .selectAll()
    .where("org_id", "=", orgId)
    .where("id", "=", repositoryId)
    .executeTakeFirst();
}

export async function reportExists(db: Executor, orgId: string, reportId: string): Promise<boolean> {
  const row = await db
    .selectFrom("readiness_reports")
    .select("id")
    .where("org_id", "=", orgId)
    .where("id", "=", reportId)
    .executeTakeFirst();
  return row !== undefined;
}

export async function insertReport(db: Executor, orgId: string, repositoryId: string, r: ValidReport): Promise<void> {
  await db
    .insertInto("readiness_reports")
    .values({
      id: r.reportId,
      org_id: orgId,
      repository_id: repositoryId,
      created_at: r.createdAt,
      repo_url: r.repoUrl,
      apps: JSON.stringify(r.apps),
      criteria: JSON.stringify(r.criteria),
      commit_hash: r.commitHash,
      branch: r.branch,
      has_local_changes: r.hasLocalChanges,
      has_non_remote_commits: r.hasNonRemoteCommits,
      model_id: r.modelId,
      reasoning_effort: r.reasoningEffort,
      droid_version: r.droidVersion,
    })
    .execute();
}

export async function findReportPosition(
  db: Executor,
  orgId: string,
  reportId: string,
): Promise<ReportPosition | undefined> {
  return db
    .selectFrom("readiness_reports")
    .select(["created_at", "id"])
    .where("org_id", "=", orgId)
    .where("id", "=", reportId)
    .executeTakeFirst();
}

/** Reports of `scope`, each joined with its repository's previous report's criteria. */
function reportsWithPrevious(db: Executor) {
  return db
    .selectFrom("readiness_reports as r")
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom("readiness_reports as p")
          .select("p.criteria as previous_criteria")
          .whereRef("p.org_id", "=", "r.org_id")
          .whereRef("p.repository_id", "=", "r.repository_id")
          .where(sql<boolean>`(p.created_at, p.id) < (r.created_at, r.id)`)
          .orderBy("p.created_at", "desc")
          .orderBy("p.id", "desc")
          .limit(1)
          .as("prev"),
      (join) => join.onTrue(),
    )
    .selectAll("r")
    .select("prev.previous_criteria");
}

export interface ReportPageQuery {
  repositoryId?: string | undefined;
  limit: number;
  after?: ReportPosition | undefined;
}

/** One page of the organization's reports, newest first (created_at desc, id desc). */
export async function listReportsPage(db: Executor, orgId: string, q: ReportPageQuery): Promise<ReportWithPrevious[]> {
  let query = reportsWithPrevious(db).where("r.org_id", "=", orgId);
  if (q.repositoryId !== undefined) query = query.where("r.repository_id", "=", q.repositoryId);
  if (q.after)
    query = query.where(sql<boolean>`(r.created_at, r.id) < (${q.after.created_at}::timestamptz, ${q.after.id})`);
  const rows = await query.orderBy("r.created_at", "desc").orderBy("r.id", "desc").limit(q.limit).execute();
  return rows as ReportWithPrevious[];
}

export interface RepositorySummary extends RepositoryRow {
  report_count: number;
  latest: ReportWithPrevious | undefined;
}

/** The organization's repositories ordered by URL, each with its report count and latest report. */
export async function listRepositories(db: Executor, orgId: string): Promise<RepositorySummary[]> {
  const repositories = await db
    .selectFrom("readiness_repositories as repo")
    .leftJoin("readiness_reports as r", (j) =>
      j.onRef("r.org_id", "=", "repo.org_id").onRef("r.repository_id", "=", "repo.id"),
    )
    .select(["repo.id", "repo.org_id", "repo.url", "repo.created_at"])
    .select((eb) => eb.fn.count<number>("r.id").as("report_count"))
    .where("repo.org_id", "=", orgId)
    .groupBy(["repo.id", "repo.org_id", "repo.url", "repo.created_at"])
    .orderBy("repo.url")
    .execute();
  const latest = (await reportsWithPrevious(db)
    .distinctOn("r.repository_id")
    .where("r.org_id", "=", orgId)
    .orderBy("r.repository_id")
    .orderBy("r.created_at", "desc")
    .orderBy("r.id", "desc")
    .execute()) as ReportWithPrevious[];
  const latestByRepository = new Map(latest.map((row) => [row.repository_id, row]));
  return repositories.map((repo) => ({
    ...repo,
    report_count: Number(repo.report_count),
    latest: latestByRepository.get(repo.id),
  }));
}
