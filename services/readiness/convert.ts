// Stored rows -> protobuf messages. Optional §2.7 fields are set only when the report carried
// them, so they are omitted from JSON rather than printed empty.
import { create } from "@bufbuild/protobuf";
import {
  ModelUsedSchema,
  ReadinessReportSchema,
  RepositorySchema,
  type ReadinessReport,
  type Repository,
} from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import type { RepositorySummary, ReportWithPrevious } from "./queries.js";
import { changesSince, overallScore } from "./scoring.js";

export function toReadinessReport(row: ReportWithPrevious): ReadinessReport {
  const report = create(ReadinessReportSchema, {
    reportId: row.id,
    createdAt: row.created_at.getTime(),
    repoUrl: row.repo_url,
    apps: row.apps,
    report: Object.fromEntries(
      Object.entries(row.criteria).map(([id, c]) => [
        id,
        { numerator: c.numerator, denominator: c.denominator, rationale: c.rationale, appPaths: c.appPaths ?? [] },
      ]),
    ),
    score: overallScore(row.criteria),
    changesSincePrevious: changesSince(row.previous_criteria ?? undefined, row.criteria),
  });
  if (row.commit_hash !== null) report.commitHash = row.commit_hash;
  if (row.branch !== null) report.branch = row.branch;
  if (row.has_local_changes !== null) report.hasLocalChanges = row.has_local_changes;
  if (row.has_non_remote_commits !== null) report.hasNonRemoteCommits = row.has_non_remote_commits;
  if (row.model_id !== null && row.reasoning_effort !== null) {
    report.modelUsed = create(ModelUsedSchema, { id: row.model_id, reasoningEffort: row.reasoning_effort });
  }
  if (row.droid_version !== null) report.droidVersion = row.droid_version;
  return report;
}

export function toRepository(summary: RepositorySummary): Repository {
  return create(RepositorySchema, {
    id: summary.id,
    url: summary.url,
    createdAt: summary.created_at.getTime(),
    reportCount: summary.report_count,
    ...(summary.latest ? { latestReport: toReadinessReport(summary.latest) } : {}),
  });
}
