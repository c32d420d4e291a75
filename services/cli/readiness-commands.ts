// `agentplane readiness submit FILE.json --org ID` and `agentplane readiness repos --org ID`:
// the same validation and storage as the SubmitReport and ListRepositories RPCs, straight
// against the database.
import { readFile } from "node:fs/promises";
import { create, toJson } from "@bufbuild/protobuf";
import { ListRepositoriesResponseSchema } from "../../gen/agentplane/readiness/v1/readiness_pb.js";
import { findOrganization } from "../organization/queries.js";
import { toRepository } from "../readiness/convert.js";
import { listRepositories } from "../readiness/queries.js";
import { readReportJson } from "../readiness/report-json.js";
import { submitReport } from "../readiness/submit.js";
import type { Command, CommandContext } from "./commands.js";
import { withDatabase } from "./database.js";
import { UsageError } from "./output.js";

function orgOption(ctx: CommandContext): string {
  const org = ctx.options.org;
  if (typeof org !== "string" || org.trim() === "") throw new UsageError("--org is required");
  return org.trim();
}

async function readInput(file: string): Promise<string> {
  if (file !== "-") return readFile(file, "utf8");
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** The report file as JSON; a file that is missing or not JSON is a one-line error. */
async function readReportFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readInput(file);
  } catch (err) {
    throw new Error(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Error(`${file} is not valid JSON: ${(err as Error).message}`);
  }
}

const submit: Command = {
  words: 2,
  quiet: true,
  options: ["org"],
  usage: "FILE.json|- --org ID",
  summary:
    "validate and store a readiness report for an organization (- reads stdin); prints its report and repository IDs",
  run: async (ctx) => {
    const [file, ...extra] = ctx.args;
    if (!file)
      throw new UsageError(
        "readiness submit needs a report file: agentplane readiness submit FILE.json --org ID (- reads stdin)",
      );
    if (extra.length > 0) throw new UsageError(`readiness submit takes one file, got also ${extra.join(" ")}`);
    const orgId = orgOption(ctx);
    const json = await readReportFile(file);
    // Type problems from reading and validation's problems are reported together, in one line.
    const { report, problems } = readReportJson(json);
    await withDatabase(ctx.config, ctx.logger, async ({ db }) => {
      const { reportId, repoId } = await submitReport(db, orgId, report, { readProblems: problems });
      ctx.out.result({ reportId, repoId }, `stored report ${reportId} (repository ${repoId})`);
    });
  },
};

function describeRepository(r: ReturnType<typeof toRepository>): string {
  const latest = r.latestReport;
  const when = latest ? new Date(latest.createdAt).toISOString() : "-";
  const score = latest?.score === undefined ? "-" : `${Math.round(latest.score * 100)}%`;
  return `${r.id}  ${r.url}  reports=${r.reportCount}  latest=${when}  score=${score}`;
}

const repos: Command = {
  words: 2,
  quiet: true,
  options: ["org"],
  usage: "--org ID",
  summary: "list an organization's repositories with their latest report",
  run: (ctx) =>
    withDatabase(ctx.config, ctx.logger, async ({ db }) => {
      const orgId = orgOption(ctx);
      if (!(await findOrganization(db, orgId))) throw new Error(`organization ${orgId} not found`);
      const repositories = (await listRepositories(db, orgId)).map(toRepository);
      const json = toJson(ListRepositoriesResponseSchema, create(ListRepositoriesResponseSchema, { repositories }), {
        alwaysEmitImplicit: true,
      }) as Record<string, unknown>;
      const text =
        repositories.length === 0
          ? `no repositories in organization ${orgId}`
          : repositories.map(describeRepository).join("\n");
      ctx.out.result(json, text);
    }),
};

export const READINESS_COMMANDS: Record<string, Command> = {
  "readiness submit": submit,
  "readiness repos": repos,
};
