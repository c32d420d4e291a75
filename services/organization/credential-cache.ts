// The authenticator's memory of resolved credentials: valid ones and invalid ones, kept apart.
//
// Two bounded maps rather than one, so a flood of random keys (each one invalid, each one new)
// fills only the invalid map and never evicts the valid keys that legitimate clients present:
// those stay one hash and one map lookup away, with no query. Each valid entry records the
// subjects it was resolved from ("user:<id>", "org:<id>", "account:<id>"); a change to any of
// them (credential-changes.ts) drops it at once. A valid entry past its TTL is not trusted, but
// it is kept (for `retainMs`) as "stale": the credential must be looked up again, and may be
// even while its client's address is over the failure limit (auth-failures.ts), because it was
// valid a moment ago. Random keys never have a stale entry, so a flood gains nothing from it.
import type { Caller } from "../platform/context.js";

interface Valid {
  readonly caller: Caller;
  readonly subjects: readonly string[];
  readonly expires: number;
}

export interface CredentialCacheOptions {
  /** Valid credentials held at most. */
  readonly maxValid: number;
  /** Invalid credentials held at most. */
  readonly maxInvalid: number;
  /** How long an invalid credential is remembered. */
  readonly invalidTtlMs: number;
  /** How long a valid credential past its TTL is still known as one that was valid. */
  readonly retainMs: number;
  readonly now?: () => number;
}

export type Lookup =
  | { readonly kind: "valid"; readonly caller: Caller }
  /** Valid when last looked up, past its TTL: look it up again. */
  | { readonly kind: "stale" }
  | { readonly kind: "invalid" }
  | { readonly kind: "unknown" };

const UNKNOWN: Lookup = { kind: "unknown" };
const STALE: Lookup = { kind: "stale" };
const INVALID: Lookup = { kind: "invalid" };

/** Deletes the oldest entry of a Map when it is full (Maps iterate in insertion order). */
function makeRoom<K, V>(map: Map<K, V>, max: number): void {
  while (map.size >= max) map.delete(map.keys().next().value as K);
}

export class CredentialCache {
  private readonly valid = new Map<string, Valid>();
  private readonly invalid = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly options: CredentialCacheOptions) {
    this.now = options.now ?? Date.now;
  }

  lookup(key: string): Lookup {
    const now = this.now();
    const hit = this.valid.get(key);
    if (hit !== undefined) {
      if (hit.expires > now) return { kind: "valid", caller: hit.caller };
      if (hit.expires + this.options.retainMs > now) return STALE;
      this.valid.delete(key);
    }
    const until = this.invalid.get(key);
    if (until !== undefined) {
      if (until > now) return INVALID;
      this.invalid.delete(key);
    }
    return UNKNOWN;
  }

  /** Remembers a valid credential until `ttlMs` from now (or `notAfterMs`, if sooner). */
  rememberValid(key: string, caller: Caller, subjects: readonly string[], ttlMs: number, notAfterMs = Infinity): void {
    this.valid.delete(key); // re-inserted last: the most recently used are evicted last
    makeRoom(this.valid, this.options.maxValid);
    this.valid.set(key, { caller, subjects, expires: Math.min(this.now() + ttlMs, notAfterMs) });
  }

  rememberInvalid(key: string): void {
    makeRoom(this.invalid, this.options.maxInvalid);
    this.invalid.set(key, this.now() + this.options.invalidTtlMs);
  }

  /**
   * Drops every valid entry resolved from `subject`; `*` drops them all. Invalid entries stay:
   * nothing makes an unknown, revoked or forged credential valid later.
   */
  forget(subject: string): void {
    if (subject === "*") {
      this.valid.clear();
      return;
    }
    for (const [key, entry] of this.valid) if (entry.subjects.includes(subject)) this.valid.delete(key);
  }

  get sizes(): { valid: number; invalid: number } {
    return { valid: this.valid.size, invalid: this.invalid.size };
  }
}
