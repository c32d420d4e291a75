// ReadinessService (public, API keys) and ReportSubmissionService (internal), built from their
// dependencies.
import type { ServiceImpl } from "@connectrpc/connect";
import type { Kysely } from "kysely";
import type { ReadinessService, ReportSubmissionService } from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import type { Database } from "../database.js";
import { onConnection, stopIfAbandoned } from "../platform/abandoned.js";
import { principalOf } from "../platform/context.js";
import { parsePageLimit } from "../platform/cursors.js";
import { invalidArgument, notFound } from "../platform/errors.js";
import { actingOrg } from "../platform/tenancy.js";
import { findOrganization } from "../organization/queries.js";
import { toReadinessReport, toRepository } from "./convert.js";
import {
  findReportPosition,
  findRepository,
  listReportsPage,
  listRepositories,
  type ReportPosition,
} from "./queries.js";
import { submitReport } from "./submit.js";
import { isUuid } from "./validation.js";

export interface ReadinessDeps {
  db: Kysely<Database>;
}

export function createReadinessService(deps: ReadinessDeps): Partial<ServiceImpl<typeof ReadinessService>> {
  return {
    async listReports(req, ctx) {
      const { orgId } = principalOf(ctx);
      const limit = parsePageLimit(req.limit);
      // Three reads on one pooled connection; an abandoned call (platform/abandoned.ts) stops
      // once one is free and before the page.
      const rows = await onConnection(deps.db, ctx.signal, async (conn) => {
        let repositoryId: string | undefined;
        if (req.repoId !== undefined && req.repoId !== "") {
          // Another organization's repository is as unknown as a made-up one.
          const id = req.repoId;
          const repository = isUuid(id) ? await findRepository(conn, orgId, id.toLowerCase()) : undefined;
          if (!repository) {
            const named = JSON.stringify(id.slice(0, 60));
            throw invalidArgument("repoId", `no repository with ID ${named} in your organization`);
          }
          repositoryId = repository.id;
        }
        let after: ReportPosition | undefined;
        if (req.startAfter !== undefined && req.startAfter !== "") {
          const id = req.startAfter;
          after = isUuid(id) ? await findReportPosition(conn, orgId, id.toLowerCase()) : undefined;
          if (!after) {
            const named = JSON.stringify(id.slice(0, 60));
            throw invalidArgument("startAfter", `no report with ID ${named} in your organization`);
          }
        }
        stopIfAbandoned(ctx.signal);
        return listReportsPage(conn, orgId, { repositoryId, limit, after });
      });
      return { reports: rows.map(toReadinessReport) };
    },
  };
}

export function createReportSubmissionService(
  deps: ReadinessDeps,
): Partial<ServiceImpl<typeof ReportSubmissionService>> {
  return {
    async submitReport(req, ctx) {
      const orgId = actingOrg(ctx, req.orgId.trim() === "" ? undefined : req.orgId, "orgId");
      if (!req.report) throw invalidArgument("report", "is required");
      return submitReport(deps.db, orgId, req.report);
    },

    async listRepositories(req, ctx) {
      const orgId = actingOrg(ctx, req.orgId.trim() === "" ? undefined : req.orgId, "orgId");
      if (!(await findOrganization(deps.db, orgId))) throw notFound("organization");
      const repositories = await listRepositories(deps.db, orgId);
      return { repositories: repositories.map(toRepository) };
    },
  };
}
