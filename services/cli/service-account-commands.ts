// `agentplane service-account create|list|revoke`: the workload credentials of the internal gRPC
// services (runners, hosts, ingest clients). A token is printed once, at creation; only its
// hash is stored.
import { findOrganization } from "../organization/queries.js";
import {
  createServiceAccount,
  listServiceAccounts,
  revokeServiceAccount,
  type ServiceAccountListing,
} from "../organization/service-accounts.js";
import { SCOPES } from "../modules.js";
import type { Command, CommandContext } from "./commands.js";
import { withDatabase } from "./database.js";
import { UsageError } from "./output.js";

const NAME = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}$/;

function scopesOption(ctx: CommandContext): string[] {
  const raw = ctx.options.scopes;
  if (typeof raw !== "string" || raw.trim() === "")
    throw new UsageError(`--scopes is required (a comma list of: ${SCOPES.join(", ")})`);
  const scopes = [
    ...new Set(
      raw
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== ""),
    ),
  ];
  const unknown = scopes.filter((s) => !SCOPES.includes(s));
  if (unknown.length > 0)
    throw new UsageError(
      `--scopes: unknown scope ${unknown.map((s) => `"${s}"`).join(", ")} (known: ${SCOPES.join(", ")})`,
    );
  if (scopes.length === 0) throw new UsageError("--scopes names no scope");
  return scopes;
}

function describe(a: ServiceAccountListing): Record<string, unknown> {
  return {
    id: a.id,
    name: a.name,
    orgId: a.org_id,
    scopes: a.scopes,
    prefix: a.prefix,
    createdAt: a.created_at.toISOString(),
    revokedAt: a.revoked_at?.toISOString() ?? null,
  };
}

const create: Command = {
  words: 2,
  quiet: true,
  options: ["name", "scopes", "org"],
  usage: "--name N --scopes a,b [--org ID]",
  summary: `create a workload credential for the internal gRPC services; prints its token (shown once). Scopes: ${SCOPES.join(", ")}. --org binds it to one organization`,
  run: (ctx) =>
    withDatabase(ctx.config, ctx.logger, async ({ db }) => {
      const name = typeof ctx.options.name === "string" ? ctx.options.name.trim() : "";
      if (!NAME.test(name))
        throw new UsageError("--name is required: 1-100 letters, digits, spaces, dots, dashes or underscores");
      const scopes = scopesOption(ctx);
      const orgId =
        typeof ctx.options.org === "string" && ctx.options.org.trim() !== "" ? ctx.options.org.trim() : null;
      if (orgId !== null && !(await findOrganization(db, orgId))) throw new Error(`organization ${orgId} not found`);
      const { account, token } = await createServiceAccount(db, { name, scopes, orgId });
      ctx.out.result({ ...describe(account), token }, token);
    }),
};

const list: Command = {
  words: 2,
  quiet: true,
  options: ["org"],
  usage: "[--org ID]",
  summary: "list service accounts (never their tokens), all or one organization's",
  run: (ctx) =>
    withDatabase(ctx.config, ctx.logger, async ({ db }) => {
      const orgId =
        typeof ctx.options.org === "string" && ctx.options.org.trim() !== "" ? ctx.options.org.trim() : undefined;
      const accounts = await listServiceAccounts(db, orgId);
      const text = accounts
        .map(
          (a) =>
            `${a.id}  ${a.prefix}…  ${a.name}  ${a.org_id ?? "(any organization)"}  ${a.scopes.join(",")}${a.revoked_at ? "  revoked" : ""}`,
        )
        .join("\n");
      ctx.out.result({ accounts: accounts.map(describe) }, text || "no service accounts");
    }),
};

const revoke: Command = {
  words: 2,
  quiet: true,
  options: [],
  usage: "ID",
  summary: "revoke a service account; every replica refuses it within 1 s",
  run: (ctx) =>
    withDatabase(ctx.config, ctx.logger, async ({ db }) => {
      const [id, ...rest] = ctx.args;
      if (id === undefined || rest.length > 0) throw new UsageError("usage: agentplane service-account revoke ID");
      if (!(await revokeServiceAccount(db, id))) throw new Error(`no live service account ${id}`);
      ctx.out.result({ id, revoked: true }, `revoked ${id}`);
    }),
};

export const SERVICE_ACCOUNT_COMMANDS: Record<string, Command> = {
  "service-account create": create,
  "service-account list": list,
  "service-account revoke": revoke,
};
