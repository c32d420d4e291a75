// The commands of the agentplane CLI, keyed by their words ("org create").
import { join } from "node:path";
import { MODULE_NAMES, type Config } from "../platform/config.js";
import { violatedConstraint } from "../platform/errors.js";
import { ROLES, type Role } from "../platform/context.js";
import type { Logger } from "../platform/logger.js";
import {
  createApiKey,
  createOrganization,
  createUser,
  findOrganization,
  findUserAnyOrg,
} from "../organization/queries.js";
import { ensureDemoOrganization, saveDemoKey, writeDemoData } from "../demo.js";
import type { DemoOptions } from "../platform/module.js";
import { startServer } from "../server.js";
import { withDatabase } from "./database.js";
import { RUNNER_COMMANDS } from "./runner-command.js";
import { UsageError, type Output } from "./output.js";
import { READINESS_COMMANDS } from "./readiness-commands.js";
import { ANALYTICS_COMMANDS } from "./analytics-commands.js";
import { SERVICE_ACCOUNT_COMMANDS } from "./service-account-commands.js";

export interface CommandContext {
  config: Config;
  logger: Logger;
  out: Output;
  options: Record<string, string | boolean | undefined>;
  args: string[];
}

export interface Command {
  /** How many words name the command ("org create" is 2). */
  words: number;
  /** Log only warnings unless LOG_LEVEL says otherwise. */
  quiet: boolean;
  /**
   * The options it reads, without the dashes. The command line refuses any other for this
   * command, so a command cannot read an option that --help does not name (usage.ts).
   */
  options: readonly string[];
  /** What --help shows after the command's words: its arguments and options ("--name N [--plan P]"). */
  usage: string;
  /** What --help says it does. */
  summary: string;
  run(ctx: CommandContext): Promise<void>;
}

function required(ctx: CommandContext, name: string): string {
  const value = ctx.options[name];
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} is required`);
  return value.trim();
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const DEFAULT_DEMO: DemoOptions = { days: 30, users: 12 };

function positiveInt(ctx: CommandContext, name: string, fallback: number, max: number): number {
  const raw = ctx.options[name];
  if (raw === undefined) return fallback;
  if (typeof raw !== "string" || !/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    throw new UsageError(`--${name} must be an integer from 1 to ${max}`);
  }
  return Number(raw);
}

async function serve(ctx: CommandContext): Promise<void> {
  const { config, logger } = ctx;
  const server = await startServer(config, logger);
  let banner = "";
  let keyFile: string | undefined;
  if (server.database.kind === "pglite" && config.seedDemo) {
    const demo = await ensureDemoOrganization(server.platform.db);
    if (demo.created) await writeDemoData(server.platform.db, demo.orgId, DEFAULT_DEMO);
    if (demo.apiKey) {
      keyFile = await saveDemoKey(config.dataDir, demo.apiKey);
      banner += `\nCreated the demo organization ${demo.orgId}.\nOwner API key (shown once, also saved to ${keyFile}):\n\n  ${demo.apiKey}\n`;
    } else {
      keyFile = join(config.dataDir, "demo-api-key");
      banner += `\nDemo organization ${demo.orgId} (its owner's key is in ${keyFile}).\n`;
    }
  }
  banner += `\n${server.restUrl ? `REST edge: ${server.restUrl}   ` : ""}gRPC: ${server.grpcUrl}   internal gRPC: ${server.internalGrpcUrl}\n`;
  if (server.restUrl && keyFile) {
    banner += `Try:\n  curl -s -H "Authorization: Bearer $(cat ${keyFile})" ${server.restUrl}/api/v0/organization/users\n`;
  }
  process.stdout.write(`${banner}\n`);
  const shutdown = (signal: string) => {
    logger.info({ signal }, "shutting down");
    server.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
}

/** The commands of the organization and the server: the head of COMMANDS. */
const CORE_COMMANDS: Record<string, Command> = {
  serve: {
    words: 1,
    quiet: false,
    options: ["services"],
    usage: "[--services a,b]",
    summary: `run the services and the REST edge (what npm start runs); --services: all, or a comma list of ${MODULE_NAMES.join(", ")}`,
    run: serve,
  },

  migrate: {
    words: 1,
    quiet: false,
    options: [],
    usage: "",
    summary: "apply the database migrations and exit",
    run: (ctx) =>
      withDatabase(ctx.config, ctx.logger, async (database) => {
        ctx.out.result({ ok: true, database: database.kind }, `migrations applied (${database.kind})`);
      }),
  },

  "org create": {
    words: 2,
    quiet: true,
    options: ["name", "plan"],
    usage: "--name N [--plan free|team|enterprise]",
    summary: "create an organization (plan: team unless given); prints its ID",
    run: (ctx) =>
      withDatabase(ctx.config, ctx.logger, async ({ db }) => {
        const name = required(ctx, "name");
        const plan = typeof ctx.options.plan === "string" ? ctx.options.plan : "team";
        if (!["free", "team", "enterprise"].includes(plan))
          throw new UsageError("--plan must be free, team or enterprise");
        const org = await createOrganization(db, { name, plan });
        ctx.out.result({ id: org.id, name: org.name, plan: org.plan }, org.id);
      }),
  },

  "user create": {
    words: 2,
    quiet: true,
    options: ["org", "email", "role", "first-name", "last-name"],
    usage: "--org ID --email E --role R [--first-name F] [--last-name L]",
    summary: `create a user in an organization (role: ${ROLES.join(", ")}); prints its ID`,
    run: (ctx) =>
      withDatabase(ctx.config, ctx.logger, async ({ db }) => {
        const orgId = required(ctx, "org");
        const email = required(ctx, "email");
        const role = required(ctx, "role");
        if (!EMAIL.test(email)) throw new UsageError(`--email "${email}" is not an email address`);
        if (!(ROLES as readonly string[]).includes(role))
          throw new UsageError(`--role must be one of ${ROLES.join(", ")}`);
        if (!(await findOrganization(db, orgId))) throw new Error(`organization ${orgId} not found`);
        const user = await createUser(db, {
          orgId,
          email,
          role: role as Role,
          firstName: typeof ctx.options["first-name"] === "string" ? ctx.options["first-name"] : "",
          lastName: typeof ctx.options["last-name"] === "string" ? ctx.options["last-name"] : "",
        }).catch((err: unknown) => {
          throw violatedConstraint(err) === "users_org_email"
            ? new Error(`a user with email ${email} already exists in organization ${orgId}`)
            : err;
        });
        ctx.out.result({ id: user.id, orgId, email: user.email, role: user.role }, user.id);
      }),
  },

  "key create": {
    words: 2,
    quiet: true,
    options: ["user"],
    usage: "--user ID",
    summary: "create an API key for a user; prints it (shown once, stored only as a hash)",
    run: (ctx) =>
      withDatabase(ctx.config, ctx.logger, async ({ db }) => {
        const userId = required(ctx, "user");
        const user = await findUserAnyOrg(db, userId);
        if (!user) throw new Error(`user ${userId} not found`);
        const { id, key } = await createApiKey(db, user.org_id, user.id);
        ctx.out.result({ id, key, userId: user.id, orgId: user.org_id }, key);
      }),
  },

  demo: {
    words: 1,
    quiet: true,
    options: ["org", "days", "users"],
    usage: "[--org ID] [--days N] [--users N]",
    summary: `write demo data across every area for an organization (default: the demo organization, created if absent; ${DEFAULT_DEMO.days} days, ${DEFAULT_DEMO.users} users)`,
    run: (ctx) =>
      withDatabase(ctx.config, ctx.logger, async ({ db }) => {
        const options: DemoOptions = {
          days: positiveInt(ctx, "days", DEFAULT_DEMO.days, 366),
          users: positiveInt(ctx, "users", DEFAULT_DEMO.users, 100_000),
        };
        let orgId: string;
        let apiKey: string | undefined;
        if (typeof ctx.options.org === "string") {
          orgId = ctx.options.org;
          if (!(await findOrganization(db, orgId))) throw new Error(`organization ${orgId} not found`);
        } else {
          const demo = await ensureDemoOrganization(db);
          orgId = demo.orgId;
          apiKey = demo.apiKey;
          if (apiKey) await saveDemoKey(ctx.config.dataDir, apiKey);
        }
        const areas = await writeDemoData(db, orgId, options);
        ctx.out.result(
          { orgId, areas, ...(apiKey ? { apiKey } : {}) },
          `demo data written for ${orgId} (${areas.join(", ")})` +
            (apiKey ? `\nowner API key (shown once): ${apiKey}` : ""),
        );
      }),
  },
};

/** Every command, keyed by its words, in the order --help lists them (usage.ts). */
export const COMMANDS: Record<string, Command> = {
  ...CORE_COMMANDS,
  ...SERVICE_ACCOUNT_COMMANDS,
  ...READINESS_COMMANDS,
  ...ANALYTICS_COMMANDS,
  ...RUNNER_COMMANDS,
};
