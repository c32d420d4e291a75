// ComputerService (public) and HostService (internal), built from their dependencies.
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { ComputerService, HostService } from "../../gen/agentplane/computers/v1alpha1/computers_pb.js";
import type { Kysely } from "kysely";
import type { Database, Executor } from "../database.js";
import { onConnection, stopIfAbandoned } from "../platform/abandoned.js";
import { requireRole } from "../platform/auth.js";
import { principalOf } from "../platform/context.js";
import { alreadyExists, invalidArgument, notFound, violatedConstraint } from "../platform/errors.js";
import { requireOwnOrg } from "../platform/tenancy.js";
import {
  completeHostRegistration,
  findComputerByName,
  insertComputer,
  listSteps,
  lockComputer,
  lockComputerByHostId,
  restartHostRegistration,
  updateComputer,
  type ComputerRow,
  type ComputerUpdate,
} from "./queries.js";
import { planSteps } from "./steps.js";
import { toComputer, type ComputerView } from "./view.js";
import {
  validateCreate,
  validateHostId,
  validateHostname,
  validateName,
  validateRelayUrl,
  validateUpdate,
} from "./validation.js";

export interface ComputersDeps {
  db: Kysely<Database>;
}

/** Who may create, change and delete computers. */
export const WRITERS = ["owner", "manager", "member"] as const;

async function view(db: Executor, row: ComputerRow): Promise<ComputerView> {
  return toComputer(row, await listSteps(db, row.id));
}

/** Unique violations say something about the request: name taken, or hostId used elsewhere. */
function duplicateError(err: unknown, name: string | undefined) {
  const constraint = violatedConstraint(err);
  if (constraint === "computers_org_name")
    return alreadyExists(`name: a computer named "${name}" already exists in this organization`);
  if (constraint === "computers_host_id") return alreadyExists("hostId: another computer already uses this host");
  return err;
}

export function createComputerService(deps: ComputersDeps): Partial<ServiceImpl<typeof ComputerService>> {
  return {
    async createComputer(req, ctx: HandlerContext) {
      const principal = principalOf(ctx);
      requireRole(principal, WRITERS, "creating computers");
      const input = validateCreate(req);
      let created: Awaited<ReturnType<typeof insertComputer>>;
      try {
        const steps = planSteps(input.provider, input.repos, input.autoInstallDeps);
        created = await deps.db.transaction().execute((trx) => {
          stopIfAbandoned(ctx.signal);
          return insertComputer(trx, principal.orgId, input, steps);
        });
      } catch (err) {
        throw duplicateError(err, input.name);
      }
      ctx.responseHeader.set("x-http-code", "201");
      return toComputer(created.computer, created.steps);
    },

    async updateComputer(req, ctx: HandlerContext) {
      const principal = principalOf(ctx);
      requireRole(principal, WRITERS, "updating computers");
      if (req.computerId === "") throw invalidArgument("computerId", "is required");
      const changes = validateUpdate(req);
      try {
        return await deps.db.transaction().execute(async (trx) => {
          stopIfAbandoned(ctx.signal);
          const current = await lockComputer(trx, principal.orgId, req.computerId);
          if (!current) throw notFound("computer");
          const update: ComputerUpdate = {};
          if (changes.name !== undefined) update.name = changes.name;
          if (changes.remoteUser !== undefined) update.remote_user = changes.remoteUser;
          const hostChanged = changes.hostId !== undefined && changes.hostId !== current.host_id;
          if (hostChanged) {
            update.host_id = changes.hostId;
            if (current.provider_type === "byom") {
              // Another machine: what the old host reported no longer holds, and the computer
              // is usable again only once the new host registers.
              Object.assign(update, {
                status: "provisioning",
                hostname: null,
                relay_client_url: null,
                relay_agent_url: null,
              } satisfies ComputerUpdate);
              await restartHostRegistration(trx, current.id);
            }
          }
          const row = Object.keys(update).length === 0 ? current : await updateComputer(trx, current.id, update);
          return view(trx, row);
        });
      } catch (err) {
        throw duplicateError(err, changes.name);
      }
    },

    async getComputerByName(req, ctx: HandlerContext) {
      const principal = principalOf(ctx);
      const name = validateName(req.name);
      const row = await onConnection(deps.db, ctx.signal, (conn) => findComputerByName(conn, principal.orgId, name));
      if (!row) throw notFound("computer");
      return onConnection(deps.db, ctx.signal, (conn) => view(conn, row));
    },
  };
}

export function createHostService(deps: ComputersDeps): Partial<ServiceImpl<typeof HostService>> {
  return {
    async registerHost(req, ctx: HandlerContext) {
      const hostId = validateHostId(req.hostId);
      const hostname = validateHostname(req.hostname);
      const relayClientUrl = validateRelayUrl(req.relayClientUrl, "relayClientUrl");
      const relayAgentUrl = validateRelayUrl(req.relayAgentUrl, "relayAgentUrl");
      return deps.db.transaction().execute(async (trx) => {
        stopIfAbandoned(ctx.signal);
        const current = await lockComputerByHostId(trx, hostId);
        if (!current) throw notFound("computer with this hostId");
        // A host registers only computers of the organization its credential is bound to.
        requireOwnOrg(ctx, current.org_id, "computer with this hostId");
        const update: ComputerUpdate = { hostname, relay_client_url: relayClientUrl, relay_agent_url: relayAgentUrl };
        // A byom computer is its host: registering is what makes it active. An e2b computer's
        // state belongs to the provisioning worker; its host only reports where it is reachable.
        if (current.provider_type === "byom") {
          update.status = "active";
          await completeHostRegistration(trx, current.id);
        }
        return view(trx, await updateComputer(trx, current.id, update));
      });
    },
  };
}
