// ComputerService's list and lifecycle methods (public): ListComputers (GET /api/v0/computers),
// DeleteComputer (DELETE /api/v0/computers/{id}, 204) and RetryComputerProvisioning
// (POST /api/v0/computers/{id}/provisioning/retry). computers.proto says what each does.
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { ComputerService } from "../../gen/agentplane/computers/v1alpha1/computers_pb.js";
import { onConnection, stopIfAbandoned } from "../platform/abandoned.js";
import { requireRole } from "../platform/auth.js";
import { principalOf } from "../platform/context.js";
import { keysetPage, parsePageLimit, type CursorStore } from "../platform/cursors.js";
import { conflict, invalidArgument, notFound } from "../platform/errors.js";
import { detachSessionsFromComputer, lockSessionsOnComputer } from "../sessions/computer-use-queries.js";
import { WRITERS, type ComputersDeps } from "./handlers.js";
import { requeueFailedProvisioning } from "./provisioning-queries.js";
import {
  deleteComputer,
  findComputer,
  listComputersPage,
  listSteps,
  listStepsOfComputers,
  lockComputer,
  type ComputerPosition,
} from "./queries.js";
import { toComputer } from "./view.js";

const COMPUTERS_SCOPE = { list: "computers" } as const;

type LifecycleMethods = Pick<
  ServiceImpl<typeof ComputerService>,
  "listComputers" | "deleteComputer" | "retryComputerProvisioning"
>;

function requiredComputerId(id: string): string {
  if (id === "") throw invalidArgument("computerId", "is required");
  return id;
}

/** "2 running sessions and 1 pending session": what keeps a computer from being deleted. */
function describeBusy(running: number, pending: number): string {
  const part = (n: number, status: string) => `${n} ${status} session${n === 1 ? "" : "s"}`;
  return [running > 0 ? part(running, "running") : "", pending > 0 ? part(pending, "pending") : ""]
    .filter((p) => p !== "")
    .join(" and ");
}

export function createComputerLifecycleHandlers(deps: ComputersDeps & { cursors: CursorStore }): LifecycleMethods {
  const { db, cursors } = deps;
  return {
    async listComputers(req, ctx: HandlerContext) {
      const principal = principalOf(ctx);
      const limit = parsePageLimit(req.limit);
      const { rows, pagination } = await keysetPage({
        cursors,
        principal,
        scope: COMPUTERS_SCOPE,
        cursor: req.cursor,
        limit,
        fetch: (count, after: ComputerPosition | undefined) =>
          onConnection(db, ctx.signal, (conn) => listComputersPage(conn, principal.orgId, count, after)),
        positionOf: (last): ComputerPosition => ({ createdAt: last.created_at.toISOString(), id: last.id }),
      });
      const steps = await onConnection(db, ctx.signal, (conn) =>
        listStepsOfComputers(
          conn,
          rows.map((r) => r.id),
        ),
      );
      return { computers: rows.map((r) => toComputer(r, steps.get(r.id) ?? [])), pagination };
    },

    async deleteComputer(req, ctx: HandlerContext) {
      const principal = principalOf(ctx);
      requireRole(principal, WRITERS, "deleting computers");
      const computerId = requiredComputerId(req.computerId);
      await db.transaction().execute(async (trx) => {
        stopIfAbandoned(ctx.signal);
        if (!(await findComputer(trx, principal.orgId, computerId))) throw notFound("computer");
        // Sessions first, then the computer: the order in which PostMessage and CreateSession
        // take them (a session's lock, then a share of its computer's), so none waits in a cycle.
        await lockSessionsOnComputer(trx, principal.orgId, computerId);
        if (!(await lockComputer(trx, principal.orgId, computerId))) throw notFound("computer");
        // Again under the computer's lock: a session created meanwhile (it held a share of the
        // computer, which this lock waited for) is counted and locked too; no more can come.
        const sessions = await lockSessionsOnComputer(trx, principal.orgId, computerId);
        const running = sessions.get("running") ?? 0;
        const pending = sessions.get("pending") ?? 0;
        if (running + pending > 0)
          throw conflict(
            `computer is in use by ${describeBusy(running, pending)}; interrupt or delete them before deleting the computer`,
          );
        await detachSessionsFromComputer(trx, principal.orgId, computerId);
        await deleteComputer(trx, principal.orgId, computerId);
      });
      ctx.responseHeader.set("x-http-code", "204");
      return {};
    },

    async retryComputerProvisioning(req, ctx: HandlerContext) {
      const principal = principalOf(ctx);
      requireRole(principal, WRITERS, "retrying provisioning");
      const computerId = requiredComputerId(req.computerId);
      return db.transaction().execute(async (trx) => {
        stopIfAbandoned(ctx.signal);
        const current = await lockComputer(trx, principal.orgId, computerId);
        if (!current) throw notFound("computer");
        if (current.status !== "error")
          throw conflict(
            `computer is ${current.status}: only a computer whose provisioning failed (status error) can retry it`,
          );
        const row = await requeueFailedProvisioning(trx, current.id);
        return toComputer(row, await listSteps(trx, row.id));
      });
    },
  };
}
