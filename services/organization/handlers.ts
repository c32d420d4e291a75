// OrganizationService, built from its dependencies.
import type { ServiceImpl } from "@connectrpc/connect";
import type { JsonObject } from "@bufbuild/protobuf";
import type { OrganizationService } from "../../gen/agentplane/organization/v1alpha1/organization_pb.js";
import type { Kysely } from "kysely";
import type { Database } from "../database.js";
import { onConnection } from "../platform/abandoned.js";
import { principalOf } from "../platform/context.js";
import { keysetPage, parsePageLimit, type CursorStore } from "../platform/cursors.js";
import { listUsersPage, type UserPosition, type UserRow } from "./queries.js";

export interface OrganizationDeps {
  db: Kysely<Database>;
  cursors: CursorStore;
}

const USERS_SCOPE = { list: "organization.users" } as const;

function toOrganizationUser(row: UserRow) {
  return {
    id: row.id,
    email: row.email,
    createdAt: row.created_at.toISOString(),
    metadata: row.metadata as JsonObject,
    firstName: row.first_name,
    lastName: row.last_name,
    ...(row.last_sign_in_at ? { lastSignInAt: row.last_sign_in_at.toISOString() } : {}),
  };
}

export function createOrganizationService(deps: OrganizationDeps): Partial<ServiceImpl<typeof OrganizationService>> {
  return {
    async listUsers(req, ctx) {
      const principal = principalOf(ctx);
      const limit = parsePageLimit(req.limit);
      const { rows, pagination } = await keysetPage({
        cursors: deps.cursors,
        principal,
        scope: USERS_SCOPE,
        cursor: req.cursor,
        limit,
        fetch: (count, after: UserPosition | undefined) =>
          onConnection(deps.db, ctx.signal, (conn) => listUsersPage(conn, principal.orgId, count, after)),
        positionOf: (last): UserPosition => ({ createdAt: last.created_at.toISOString(), id: last.id }),
      });
      return { users: rows.map(toOrganizationUser), pagination };
    },
  };
}
