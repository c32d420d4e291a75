// Authentication and authorization at the RPC boundary (docs/architecture.md, "Authentication and
// authorization"). Every service declares a policy and every call is checked against it before any
// handler runs; a service without a policy is refused: fail closed. The check runs before the
// request body is read on the gRPC listeners (early-auth.ts) and in this interceptor for calls that
// did not pass there (the in-process REST edge).
import { createContextKey, type Interceptor } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { DomainError, permissionDenied, unauthenticated } from "./errors.js";
import { kPrincipal, kWorkload, type Caller, type CredentialKind, type Principal, type Role } from "./context.js";

export type AuthPolicy =
  /**
   * Public API reachable through the edge; the listed user credential kinds are accepted, and
   * with `workloadScope` also a service-account token holding that scope (the OTLP receiver,
   * which collectors export to with their organization's token as users' clients do with keys).
   */
  | {
      readonly kind: "public";
      readonly credentials: readonly CredentialKind[];
      readonly workloadScope?: string;
    }
  /**
   * Internal RPCs, on the internal listener only: a service-account token holding the scope
   * its method names. `userMethods` may also be called with a user's own API key (for their
   * own organization and user only: the handler enforces that).
   */
  | {
      readonly kind: "internal";
      readonly scopes: Readonly<Record<string, string>>;
      readonly userMethods?: readonly string[];
    }
  /**
   * A service-account token, whatever its scopes: server reflection on the internal listener
   * (reflection.ts), which tells a workload that may call something there what there is.
   */
  | { readonly kind: "workload" }
  /**
   * No credentials at all: health checks (on every listener), and with `public` the pages that
   * hold no data (the web module: dashboard, OpenAPI document), which the edge routes.
   */
  | { readonly kind: "open"; readonly public?: boolean };

export interface Authenticator {
  /**
   * Resolves a bearer token into its caller, or undefined when it is not a valid credential.
   * May throw RESOURCE_EXHAUSTED when `clientAddress` presented too many invalid ones.
   */
  authenticate(token: string, clientAddress: string): Promise<Caller | undefined>;
}

/** An authenticator with what keeps it current (a watch for credential changes), ended on shutdown. */
export interface ClosableAuthenticator extends Authenticator {
  close(): Promise<void>;
}

/** The caller established before the body was read (early-auth.ts); undefined for open services. */
export interface Authenticated {
  readonly caller: Caller | undefined;
}
export const kAuthenticated = createContextKey<Authenticated | undefined>(undefined, {
  description: "authenticated before the body",
});

const BEARER = /^Bearer\s+(\S+)\s*$/i;

function credentialNoun(policy: AuthPolicy): string {
  if (policy.kind === "workload") return "service account token";
  if (policy.kind === "internal")
    return policy.userMethods?.length ? "service account token or API key" : "service account token";
  if (policy.kind === "public" && policy.workloadScope !== undefined) return "API key or service account token";
  return policy.kind === "public" && policy.credentials.includes("jwt") ? "API key or access token" : "API key";
}

/** Whether `caller` may call `method` of a service under `policy`; throws when not. */
export function authorize(policy: AuthPolicy, service: string, method: string, caller: Caller): void {
  if (policy.kind === "open") return;
  if (policy.kind === "public") {
    if (caller.kind === "workload") {
      if (policy.workloadScope === undefined)
        throw unauthenticated(
          `service account tokens are for the internal services; send an ${credentialNoun(policy)}`,
        );
      if (!caller.workload.scopes.includes(policy.workloadScope))
        throw permissionDenied(`${service}/${method} needs a service account with the ${policy.workloadScope} scope`);
      return;
    }
    if (!policy.credentials.includes(caller.principal.credentialKind))
      throw unauthenticated(`invalid or revoked ${credentialNoun(policy)}`);
    return;
  }
  if (policy.kind === "workload") {
    if (caller.kind !== "workload")
      throw permissionDenied(`${service}/${method} needs a service account token; API keys are not accepted`);
    return;
  }
  const scope = policy.scopes[method];
  if (scope === undefined) throw new DomainError("permission_denied", `no access policy for ${service}/${method}`);
  if (caller.kind === "workload") {
    if (!caller.workload.scopes.includes(scope))
      throw permissionDenied(`${service}/${method} needs a service account with the ${scope} scope`);
    return;
  }
  if (!policy.userMethods?.includes(method))
    throw permissionDenied(
      `${service}/${method} needs a service account token with the ${scope} scope; API keys are not accepted`,
    );
}

/**
 * Checks one call's credentials against its service's policy: the caller, or undefined for
 * open services. Throws UNAUTHENTICATED, PERMISSION_DENIED or RESOURCE_EXHAUSTED.
 */
export async function authenticateCall(
  authenticator: Authenticator,
  policy: AuthPolicy,
  call: { service: string; method: string; authorization: string | null | undefined; clientAddress: string },
): Promise<Caller | undefined> {
  if (policy.kind === "open") return undefined;
  const noun = credentialNoun(policy);
  if (!call.authorization) throw unauthenticated(`missing Authorization header: send Authorization: Bearer <${noun}>`);
  const match = BEARER.exec(call.authorization);
  if (!match?.[1]) throw unauthenticated(`malformed Authorization header: expected Bearer <${noun}>`);
  const caller = await authenticator.authenticate(match[1], call.clientAddress);
  if (!caller) throw unauthenticated(`invalid or revoked ${noun}`);
  authorize(policy, call.service, call.method, caller);
  return caller;
}

/**
 * The client's address for the credential-failure limit: the last X-Forwarded-For entry, which
 * the edge in front appended (Envoy with use_remote_address, or our REST edge), when the call
 * came through an edge; otherwise the connection's peer.
 */
export function clientAddressOf(
  forwardedFor: string | null | undefined,
  peer: string | undefined,
  trustForwardedFor: boolean,
): string {
  if (trustForwardedFor && forwardedFor) {
    const last = forwardedFor.slice(forwardedFor.lastIndexOf(",") + 1).trim();
    if (last !== "") return last;
  }
  return peer ?? "unknown";
}

export function authInterceptor(authenticator: Authenticator, policies: ReadonlyMap<string, AuthPolicy>): Interceptor {
  return (next) => async (req) => {
    const policy = policies.get(req.service.typeName);
    if (!policy) throw new DomainError("permission_denied", `no access policy for ${req.service.typeName}`);
    // In process (the REST edge's local transport) no listener checked the call: check it here,
    // with the address the edge forwarded.
    const caller =
      req.contextValues.get(kAuthenticated)?.caller ??
      (await authenticateCall(authenticator, policy, {
        service: req.service.typeName,
        method: req.method.name,
        authorization: req.header.get("authorization"),
        clientAddress: clientAddressOf(req.header.get("x-forwarded-for"), undefined, true),
      }));
    if (caller?.kind === "user") req.contextValues.set(kPrincipal, caller.principal);
    else if (caller?.kind === "workload") req.contextValues.set(kWorkload, caller.workload);
    return next(req);
  };
}

export function policyMap(entries: Iterable<readonly [DescService, AuthPolicy]>): Map<string, AuthPolicy> {
  const map = new Map<string, AuthPolicy>();
  for (const [service, policy] of entries) map.set(service.typeName, policy);
  return map;
}

/** Throws PERMISSION_DENIED unless the principal has one of the roles. */
export function requireRole(principal: Principal, roles: readonly Role[], action: string): void {
  if (!roles.includes(principal.role)) {
    throw permissionDenied(`${action} requires the ${roles.join(" or ")} role; you are ${principal.role}`);
  }
}

export const API_KEY_ONLY: AuthPolicy = { kind: "public", credentials: ["api_key"] };
export const API_KEY_OR_JWT: AuthPolicy = { kind: "public", credentials: ["api_key", "jwt"] };
export const OPEN: AuthPolicy = { kind: "open" };
/** Open and routed by the edge: pages that hold no data (AuthPolicy "open"). */
export const PUBLIC_OPEN: AuthPolicy = { kind: "open", public: true };
/** Any service-account token (auth.ts, AuthPolicy "workload"). */
export const ANY_WORKLOAD: AuthPolicy = { kind: "workload" };
/** A public service that also takes service-account tokens holding `scope` (auth.ts, AuthPolicy). */
export const API_KEY_OR_WORKLOAD = (scope: string): AuthPolicy => ({
  kind: "public",
  credentials: ["api_key"],
  workloadScope: scope,
});

/** An internal service's policy: the scope each method needs. */
export function internal(scopes: Readonly<Record<string, string>>, userMethods?: readonly string[]): AuthPolicy {
  return userMethods ? { kind: "internal", scopes, userMethods } : { kind: "internal", scopes };
}
