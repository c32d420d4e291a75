// Per-request data handed from interceptors to handlers through Connect context values.
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { Logger } from "./logger.js";
import { unauthenticated } from "./errors.js";

export type Role = "owner" | "manager" | "member" | "guest";
export const ROLES: readonly Role[] = ["owner", "manager", "member", "guest"];

export type CredentialKind = "api_key" | "jwt";

/** Who is calling: resolved by the auth interceptor from the Authorization header. */
export interface Principal {
  readonly orgId: string;
  readonly userId: string;
  readonly role: Role;
  readonly credentialKind: CredentialKind;
  /** Stable per credential (API key ID, or JWT subject+org): rate limits and cursors bind to it. */
  readonly credentialId: string;
  /** Requests per minute allowed for this credential (from the organization's plan). */
  readonly rateLimitPerMinute: number;
}

/**
 * A workload calling the internal services with a service-account token: what it may call
 * (scopes) and the one organization it acts for, if the account is bound to one.
 */
export interface WorkloadPrincipal {
  readonly accountId: string;
  readonly name: string;
  /** The organization it acts for whatever a request names; undefined: the organization the request names. */
  readonly orgId: string | undefined;
  readonly scopes: readonly string[];
  /** `account:<id>`: log lines and rate limits bind to it. */
  readonly credentialId: string;
}

/** Whoever presented a valid credential: a user (API key, JWT) or a workload (service account). */
export type Caller =
  | { readonly kind: "user"; readonly principal: Principal }
  | { readonly kind: "workload"; readonly workload: WorkloadPrincipal };

export const kPrincipal = createContextKey<Principal | undefined>(undefined, { description: "principal" });
export const kWorkload = createContextKey<WorkloadPrincipal | undefined>(undefined, { description: "workload" });
export const kRequestId = createContextKey<string>("", { description: "request id" });
export const kLogger = createContextKey<Logger | undefined>(undefined, { description: "request logger" });

/** The caller of a public RPC. The auth interceptor guarantees one; this guards misuse. */
export function principalOf(ctx: HandlerContext): Principal {
  const principal = ctx.values.get(kPrincipal);
  if (!principal) throw unauthenticated("missing credentials");
  return principal;
}
