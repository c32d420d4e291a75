// Whose data an OTLP export is (docs/otlp.md, "Who the data belongs to"). A user's API key
// attributes every record to that user: a `user.email` attribute naming anyone else rejects the
// record. An organization-bound service account with the analytics.ingest scope (a collector,
// a gateway) attributes each record by its `user.email` to a user of its organization: a record
// without one, or naming nobody there, is rejected. Either way an `organization.id` attribute
// naming another agentplane organization rejects the record; any other value is not ours to
// judge (Claude Code puts its own account's organization UUID there) and is ignored.
// Rejections are counted in partial_success; no
// record is ever attributed to another organization or to a user the credential does not speak
// for.
import type { HandlerContext } from "@connectrpc/connect";
import type { Executor } from "../../database.js";
import { kPrincipal, kWorkload } from "../../platform/context.js";
import { permissionDenied, unauthenticated } from "../../platform/errors.js";

export interface Owner {
  readonly orgId: string;
  readonly userId: string;
  readonly userEmail: string;
}

export type Attribution = { ok: true; owner: Owner } | { ok: false; reason: string };

/** What an item says of whose it is: its user.email and organization.id attributes, when present. */
export interface Named {
  readonly email: string | undefined;
  readonly org: string | undefined;
}

export interface Attributor {
  readonly orgId: string;
  /** Resolves the emails and organization IDs the export names, before attribute() is called. */
  prepare(named: { readonly emails: Iterable<string>; readonly orgIds: Iterable<string> }): Promise<void>;
  /**
   * The owner of an item: always a user read from the credential's organization in this request
   * (the receiver stores their events without asking again).
   */
  attribute(named: Named): Attribution;
}

/** The scope an organization's service account needs to export OTLP data. */
export const OTLP_INGEST_SCOPE = "analytics.ingest";

const normal = (email: string) => email.trim().toLowerCase();

export async function attributorFor(ctx: HandlerContext, db: Executor): Promise<Attributor> {
  const principal = ctx.values.get(kPrincipal);
  if (principal) {
    const user = await db
      .selectFrom("users")
      .select(["email"])
      .where("id", "=", principal.userId)
      .where("org_id", "=", principal.orgId)
      .executeTakeFirst();
    if (!user) throw unauthenticated("the API key's user no longer exists");
    const owner: Owner = { orgId: principal.orgId, userId: principal.userId, userEmail: user.email };
    const own = normal(user.email);
    const foreign = new Set<string>();
    return {
      orgId: principal.orgId,
      async prepare(named) {
        for (const org of await otherAgentplaneOrgs(db, principal.orgId, named.orgIds)) foreign.add(org);
      },
      attribute({ email, org }) {
        if (org !== undefined && foreign.has(org)) return otherOrg(org);
        if (email !== undefined && normal(email) !== own)
          return {
            ok: false,
            reason: `user.email "${email.slice(0, 100)}" is not the API key's user: an API key exports its own user's data only`,
          };
        return { ok: true, owner };
      },
    };
  }
  const workload = ctx.values.get(kWorkload);
  if (!workload) throw unauthenticated("missing credentials");
  // The policy let only accounts holding the scope through (auth.ts); the organization is ours.
  const orgId = workload.orgId;
  if (orgId === undefined)
    throw permissionDenied(
      "a service account exports OTLP data only when bound to an organization (service-account create --org ID)",
    );
  const users = new Map<string, { id: string; email: string }>();
  const foreign = new Set<string>();
  return {
    orgId,
    async prepare(named) {
      for (const org of await otherAgentplaneOrgs(db, orgId, named.orgIds)) foreign.add(org);
      const wanted = [...new Set([...named.emails].map(normal))].filter((e) => e !== "" && !users.has(e));
      // In chunks: an export may name many users, a statement's parameters are bounded.
      for (let i = 0; i < wanted.length; i += 1000) {
        const rows = await db
          .selectFrom("users")
          .select(["id", "email"])
          .where("org_id", "=", orgId)
          .where((eb) => eb(eb.fn("lower", ["email"]), "in", wanted.slice(i, i + 1000)))
          .execute();
        for (const row of rows) users.set(normal(row.email), row);
      }
    },
    attribute({ email, org }) {
      if (org !== undefined && foreign.has(org)) return otherOrg(org);
      if (email === undefined)
        return { ok: false, reason: "no user.email attribute: a service account's data is attributed by it" };
      const user = users.get(normal(email));
      if (!user) return { ok: false, reason: `user.email "${email.slice(0, 100)}" is not a user of the organization` };
      return { ok: true, owner: { orgId, userId: user.id, userEmail: user.email } };
    },
  };
}

/** Which of `orgIds` are agentplane organizations other than `own`. */
async function otherAgentplaneOrgs(db: Executor, own: string, orgIds: Iterable<string>): Promise<string[]> {
  const ids = [...new Set(orgIds)].filter((id) => id !== own && id !== "" && id.length <= 256);
  const found: string[] = [];
  // In chunks, as the emails: a statement's parameters are bounded.
  for (let i = 0; i < ids.length; i += 1000) {
    const rows = await db
      .selectFrom("organizations")
      .select("id")
      .where("id", "in", ids.slice(i, i + 1000))
      .execute();
    for (const row of rows) found.push(row.id);
  }
  return found;
}

function otherOrg(org: string): Attribution {
  return {
    ok: false,
    reason: `organization.id "${org.slice(0, 100)}" is another organization than the credential's`,
  };
}
