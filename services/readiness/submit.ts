// Storing a report: validation, the repository record for its URL, and the report itself, in one
// transaction. Shared by the SubmitReport RPC, `agentplane readiness submit` and the demo writer.
import type { Kysely } from "kysely";
import type { ReadinessReport } from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import type { Database } from "../database.js";
import { alreadyExists, DomainError, notFound } from "../platform/errors.js";
import { findOrganization } from "../organization/queries.js";
import { ensureRepository, insertReport, reportExists } from "./queries.js";
import { formatProblems, validateReport, type Problem } from "./validation.js";

export interface SubmitResult {
  reportId: string;
  repoId: string;
}

/** A rejected report: INVALID_ARGUMENT listing its problems (formatProblems), plus the whole list for callers that print them. */
export class ReportRejected extends DomainError {
  constructor(readonly problems: readonly Problem[]) {
    super("invalid_argument", formatProblems(problems));
  }
}

export interface SubmitOptions {
  /** Unix ms for a report without createdAt, and the "not in the future" bound. */
  now?: number;
  /**
   * Problems already found while reading the report (the CLI's JSON reader). They are listed
   * with validation's own; validation's problems about the same fields are dropped, since the
   * reader's say better what is wrong there.
   */
  readProblems?: readonly Problem[];
}

export async function submitReport(
  db: Kysely<Database>,
  orgId: string,
  report: ReadinessReport,
  options: SubmitOptions = {},
): Promise<SubmitResult> {
  const readProblems = options.readProblems ?? [];
  const validation = validateReport(report, options.now ?? Date.now());
  if (!validation.ok || readProblems.length > 0) {
    const named = new Set(readProblems.map((p) => p.field));
    const more = validation.ok ? [] : validation.problems.filter((p) => !named.has(p.field));
    throw new ReportRejected([...readProblems, ...more]);
  }
  const valid = validation.report;
  if (!(await findOrganization(db, orgId))) throw notFound("organization");
  return db.transaction().execute(async (trx) => {
    if (await reportExists(trx, orgId, valid.reportId))
      throw alreadyExists(`reportId: the organization already has report ${valid.reportId}`);
    const repository = await ensureRepository(trx, orgId, valid.repositoryUrl);
    await insertReport(trx, orgId, repository.id, valid);
    return { reportId: valid.reportId, repoId: repository.id };
  });
}
