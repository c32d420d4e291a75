// Whose data an OTLP export is (docs/otlp.md, "Who the data belongs to"). A user's API key
// attributes every record to that user: a `user.email` attribute naming anyone else rejects the
// record. An organization-bound service account with the analytics.ingest scope (a collector,
// a gateway) attributes each record by its `user.email` to a user of its organization: a record
// without one, or naming nobody there, is rejected. Either way an `organization.id` attribute
// naming another organization rejects the record. Rejections are counted in partial_success; no
// record is ever attributed to another organization or to a user the credential does not speak
// for.
import type { HandlerContext } from "@connectrpc/connect";
import type { Executor } from "../../database.js";
import { kPrincipal, kWorkload } from "../../platform/context.js";
import { permissionDenied, unauthenticated } from "../../platform/errors.js";
import { type Attributes, text } from "./attributes.js";

export interface Owner {
  readonly orgId: string;
  readonly userId: string;
  readonly userEmail: string;
}

export type Attribution = { ok: true; owner: Owner } | { ok: false; reason: string };

export interface Attributor {
  readonly orgId: string;
  /** Resolves the emails the export names (one query), before attribute() is called. */
  prepare(emails: Iterable<string>): Promise<void>;
  attribute(attrs: Attributes): Attribution;
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
    return {
      orgId: principal.orgId,
      prepare: async () => {},
      attribute(attrs) {
        const org = text(attrs, "organization.id");
        if (org !== undefined && org !== owner.orgId) return otherOrg(org);
        const email = text(attrs, "user.email");
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
  return {
    orgId,
    async prepare(emails) {
      const wanted = [...new Set([...emails].map(normal))].filter((e) => e !== "" && !users.has(e));
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
    attribute(attrs) {
      const org = text(attrs, "organization.id");
      if (org !== undefined && org !== orgId) return otherOrg(org);
      const email = text(attrs, "user.email");
      if (email === undefined)
        return { ok: false, reason: "no user.email attribute: a service account's data is attributed by it" };
      const user = users.get(normal(email));
      if (!user) return { ok: false, reason: `user.email "${email.slice(0, 100)}" is not a user of the organization` };
      return { ok: true, owner: { orgId, userId: user.id, userEmail: user.email } };
    },
  };
}

function otherOrg(org: string): Attribution {
  return {
    ok: false,
    reason: `organization.id "${org.slice(0, 100)}" is not the credential's organization`,
  };
}
