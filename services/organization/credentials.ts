// Resolves bearer tokens into callers: users' API keys (`apk_…`, hashed lookup) and JWTs (HS256
// with JWT_SECRET, or a JWKS URL; `exp` required, `iss`/`aud` checked when configured), and
// workloads' service-account tokens (`aps_…`). Which kinds a service accepts is its policy's
// business (platform/auth.ts), not this file's.
//
// Resolved credentials are cached (credential-cache.ts) so the hot path does not query Postgres
// on every request. A revocation, a deleted user or a changed role reaches every replica through
// a Postgres notification (credential-changes.ts) and drops the entry at once; the cache TTL only
// bounds how long a missed notification could matter, and is short while none can arrive.
// Invalid credentials are remembered apart and rate-limited per client address (auth-failures.ts).
import { createRemoteJWKSet, jwtVerify, type JWTPayload, type JWTVerifyGetKey, type JWTVerifyOptions } from "jose";
import type { Authenticator } from "../platform/auth.js";
import type { AuthFailureLimiter } from "../platform/auth-failures.js";
import { credentialKindOf } from "../platform/auth-failures.js";
import type { Caller, Role } from "../platform/context.js";
import { PLAN_RATE_LIMITS } from "../platform/rate-limit.js";
import type { Executor } from "../database.js";
import { CredentialCache } from "./credential-cache.js";
import { API_KEY_PREFIX, findCredentialByHash, findMember, hashApiKey, recordSignIn } from "./queries.js";
import { findServiceAccountByHash, SERVICE_ACCOUNT_PREFIX } from "./service-accounts.js";

/** How long a valid credential is trusted without a look at Postgres while change notifications arrive. */
export const CACHE_TTL_MS = 10_000;
/** The same while they cannot arrive (no listener: the embedded database, or the listener reconnecting). */
export const UNWATCHED_CACHE_TTL_MS = 1_000;
const INVALID_TTL_MS = 60_000;
/** How long a credential that was valid may be looked up again despite its client's failure limit. */
const RETAIN_MS = 3_600_000;

export interface JwtSettings {
  secret?: string | undefined;
  jwksUrl?: string | undefined;
  /** When set, a token's `iss` must equal it. */
  issuer?: string | undefined;
  /** When set, a token's `aud` must name it. */
  audience?: string | undefined;
}

export interface AuthenticatorOptions {
  readonly jwt: JwtSettings;
  /** Refuses further unknown credentials from a client that presented too many. */
  readonly failures?: AuthFailureLimiter;
  /** True while credential changes are being delivered (credential-changes.ts). */
  readonly changesWatched?: () => boolean;
}

export interface CredentialAuthenticator extends Authenticator {
  /** Drops cached credentials resolved from a subject ("user:<id>", "org:<id>", "account:<id>", or "*"). */
  forget(subject: string): void;
}

function rateLimitFor(plan: string, override: number | null): number {
  return override ?? PLAN_RATE_LIMITS[plan] ?? PLAN_RATE_LIMITS.team!;
}

interface Resolved {
  readonly caller: Caller;
  readonly subjects: readonly string[];
  readonly notAfterMs?: number;
}

export function createAuthenticator(db: Executor, options: AuthenticatorOptions): CredentialAuthenticator {
  const { jwt, failures } = options;
  const cache = new CredentialCache({
    maxValid: 10_000,
    maxInvalid: 50_000,
    invalidTtlMs: INVALID_TTL_MS,
    retainMs: RETAIN_MS,
  });
  const jwks: JWTVerifyGetKey | undefined = jwt.jwksUrl ? createRemoteJWKSet(new URL(jwt.jwksUrl)) : undefined;
  const secret = jwt.secret ? new TextEncoder().encode(jwt.secret) : undefined;
  const verifyOptions: JWTVerifyOptions = {
    // A token without an expiry would be valid forever.
    requiredClaims: ["exp"],
    ...(jwt.issuer !== undefined ? { issuer: jwt.issuer } : {}),
    ...(jwt.audience !== undefined ? { audience: jwt.audience } : {}),
  };
  const ttl = () => (options.changesWatched?.() ? CACHE_TTL_MS : UNWATCHED_CACHE_TTL_MS);

  async function fromApiKey(hash: string): Promise<Resolved | undefined> {
    const row = await findCredentialByHash(db, hash);
    if (!row) return undefined;
    const principal = {
      orgId: row.org_id,
      userId: row.user_id,
      role: row.role as Role,
      credentialKind: "api_key" as const,
      credentialId: `key:${row.key_id}`,
      rateLimitPerMinute: rateLimitFor(row.plan, row.rate_limit_per_minute),
    };
    return { caller: { kind: "user", principal }, subjects: [`user:${row.user_id}`, `org:${row.org_id}`] };
  }

  async function fromServiceAccount(hash: string): Promise<Resolved | undefined> {
    const row = await findServiceAccountByHash(db, hash);
    if (!row) return undefined;
    const workload = {
      accountId: row.id,
      name: row.name,
      orgId: row.org_id ?? undefined,
      scopes: row.scopes,
      credentialId: `account:${row.id}`,
    };
    return { caller: { kind: "workload", workload }, subjects: [`account:${row.id}`] };
  }

  async function verifyJwt(token: string): Promise<JWTPayload | undefined> {
    try {
      if (secret) return (await jwtVerify(token, secret, { ...verifyOptions, algorithms: ["HS256"] })).payload;
      if (jwks) return (await jwtVerify(token, jwks, verifyOptions)).payload;
    } catch {
      return undefined;
    }
    return undefined;
  }

  /** undefined: not a valid token (remembered as invalid); null: valid, but names no member (not remembered). */
  async function fromJwt(token: string): Promise<Resolved | undefined | null> {
    const claims = await verifyJwt(token);
    if (!claims) return undefined;
    const userId = typeof claims.sub === "string" ? claims.sub : undefined;
    const orgId = typeof claims.org_id === "string" ? claims.org_id : undefined;
    if (!userId || !orgId) return undefined;
    // The role comes from our records, not from the token: a demoted user loses rights at once.
    const member = await findMember(db, orgId, userId);
    if (!member) return null;
    // An access token is what the web application's sign-in hands out: its first use is the
    // user's latest sign-in (GET /organization/users shows it as lastSignInAt).
    await recordSignIn(db, orgId, userId);
    const principal = {
      orgId,
      userId,
      role: member.role as Role,
      credentialKind: "jwt" as const,
      credentialId: `jwt:${orgId}:${userId}`,
      rateLimitPerMinute: rateLimitFor(member.plan, member.rate_limit_per_minute),
    };
    // A JWT is cached by the whole token, never past its own expiry (required, so a number).
    return {
      caller: { kind: "user", principal },
      subjects: [`user:${userId}`, `org:${orgId}`],
      notAfterMs: (claims.exp as number) * 1000,
    };
  }

  async function resolve(token: string, key: string): Promise<Resolved | undefined | null> {
    if (token.startsWith(API_KEY_PREFIX)) return fromApiKey(key);
    if (token.startsWith(SERVICE_ACCOUNT_PREFIX)) return fromServiceAccount(key);
    if (!secret && !jwks) return undefined;
    return fromJwt(token);
  }

  return {
    async authenticate(token, clientAddress) {
      // Cached by the token's hash: no credential is held in clear, and every key has one size.
      const key = hashApiKey(token);
      const known = cache.lookup(key);
      if (known.kind === "valid") return known.caller;
      if (known.kind === "invalid") return undefined;
      const kind = credentialKindOf(token);
      // A credential valid a moment ago is looked up again even from a client over its limit.
      if (known.kind === "unknown") failures?.check(clientAddress, kind);
      const resolved = await resolve(token, key);
      if (resolved) {
        cache.rememberValid(key, resolved.caller, resolved.subjects, ttl(), resolved.notAfterMs);
        return resolved.caller;
      }
      if (resolved === undefined) cache.rememberInvalid(key);
      await failures?.fail(clientAddress, kind);
      return undefined;
    },
    forget: (subject) => cache.forget(subject),
  };
}
