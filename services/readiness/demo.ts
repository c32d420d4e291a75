// Demo readiness data: a few repositories, each evaluated several times over the demo period,
// readiness mostly improving with the odd regression. Report IDs derive from the organization,
// repository and sequence number, so a second run adds nothing twice.
import { create } from "@bufbuild/protobuf";
import type { Kysely } from "kysely";
import { ReadinessReportSchema } from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import type { Database } from "../database.js";
import { demoDigest as digest, demoUuid } from "../demo-story.js";
import type { DemoOptions } from "../platform/module.js";
import { reportExists } from "./queries.js";
import { submitReport } from "./submit.js";

interface DemoRepository {
  /** Written the ways real clients send them; normalization makes one record of each. */
  url: string;
  apps: Record<string, string>;
  branch: string;
  reports: number;
}

const REPOSITORIES: DemoRepository[] = [
  {
    url: "https://github.com/demo-co/web-platform.git",
    apps: {
      "apps/web": "Customer-facing Next.js site",
      "apps/admin": "Internal admin console",
      "packages/ui": "Shared React component library",
    },
    branch: "main",
    reports: 6,
  },
  {
    url: "git@github.com:demo-co/payments-api.git",
    apps: { ".": "Payments HTTP API in Go" },
    branch: "main",
    reports: 5,
  },
  {
    url: "https://github.com/demo-co/data-pipelines",
    apps: {
      "jobs/ingest": "Event ingestion jobs",
      "jobs/rollup": "Nightly rollups",
      "lib/common": "Shared Python helpers",
    },
    branch: "develop",
    reports: 4,
  },
];

// Criterion -> how many of the repository's apps it evaluates (1: the repository as a whole).
const CRITERIA: Record<string, "each-app" | "repository"> = {
  readme: "repository",
  agents_md: "repository",
  ci_pipeline: "repository",
  code_owners: "repository",
  lint_config: "each-app",
  type_check: "each-app",
  unit_tests: "each-app",
  build_cmd: "each-app",
  dev_env_setup: "each-app",
};

const MODELS = [
  { id: "claude-sonnet-4-5", reasoningEffort: "medium" },
  { id: "gpt-5-codex", reasoningEffort: "high" },
  { id: "claude-opus-4-1", reasoningEffort: "low" },
];

export async function writeReadinessDemo(db: Kysely<Database>, orgId: string, options: DemoOptions): Promise<void> {
  const dayMs = 86_400_000;
  const end = Date.now() - 60 * 60_000;
  const span = Math.max(1, options.days) * dayMs;
  for (const [r, repo] of REPOSITORIES.entries()) {
    const appPaths = Object.keys(repo.apps);
    for (let n = 0; n < repo.reports; n++) {
      const reportId = demoUuid("readiness-demo", orgId, repo.url, String(n));
      if (await reportExists(db, orgId, reportId)) continue;
      // Evenly spread over the period, staggered per repository so reports do not coincide.
      const createdAt = Math.round(end - span + ((n + 1) * span) / (repo.reports + 1) - r * 3_600_000);
      const progress = (n + 1) / repo.reports;
      const report = Object.fromEntries(
        Object.entries(CRITERIA).map(([id, scope], c) => {
          const evaluated = scope === "each-app" ? appPaths : [];
          const denominator = Math.max(1, evaluated.length);
          const noise = (digest(orgId, repo.url, String(n), id)[0]! / 255 - 0.5) * 0.5;
          const numerator = Math.min(
            denominator,
            Math.max(0, Math.round(denominator * (progress * 0.8 + 0.1 + noise) - (c % 3 === 0 ? 0.4 : 0))),
          );
          const rationale =
            numerator === denominator
              ? `All ${denominator === 1 ? "checks" : `${denominator} applications`} pass ${id.replaceAll("_", " ")}.`
              : `${numerator} of ${denominator} ${denominator === 1 ? "checks" : "applications"} pass ${id.replaceAll("_", " ")}; the rest are missing configuration.`;
          return [id, { numerator, denominator, rationale, appPaths: evaluated }];
        }),
      );
      const model = MODELS[(r + n) % MODELS.length]!;
      const commit = digest(repo.url, String(n), "commit").toString("hex").slice(0, 40);
      await submitReport(
        db,
        orgId,
        create(ReadinessReportSchema, {
          reportId,
          createdAt,
          repoUrl: repo.url,
          apps: Object.fromEntries(Object.entries(repo.apps).map(([path, description]) => [path, { description }])),
          report,
          commitHash: commit,
          branch: repo.branch,
          hasLocalChanges: n % 4 === 3,
          hasNonRemoteCommits: false,
          modelUsed: model,
          droidVersion: `0.${18 + Math.floor(n / 2)}.${n % 3}`,
        }),
      );
    }
  }
}
