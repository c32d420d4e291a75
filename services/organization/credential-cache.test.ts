import { describe, expect, it } from "vitest";
import type { Caller } from "../platform/context.js";
import { CredentialCache } from "./credential-cache.js";

const user = (userId: string): Caller => ({
  kind: "user",
  principal: {
    orgId: "o1",
    userId,
    role: "owner",
    credentialKind: "api_key",
    credentialId: `key:${userId}`,
    rateLimitPerMinute: 60,
  },
});

describe("CredentialCache", () => {
  it("keeps valid credentials when a flood of invalid ones overflows its own map", () => {
    const cache = new CredentialCache({ maxValid: 10, maxInvalid: 100, invalidTtlMs: 60_000, retainMs: 0 });
    cache.rememberValid("good", user("u1"), ["user:u1"], 10_000);
    for (let i = 0; i < 10_000; i++) cache.rememberInvalid(`bad${i}`);
    expect(cache.lookup("good")).toEqual({ kind: "valid", caller: user("u1") });
    expect(cache.sizes).toEqual({ valid: 1, invalid: 100 });
    expect(cache.lookup("bad9999").kind).toBe("invalid");
    expect(cache.lookup("bad0").kind).toBe("unknown"); // evicted: the oldest go first
  });

  it("forgets exactly the entries resolved from a changed subject, or all of them for *", () => {
    const cache = new CredentialCache({ maxValid: 10, maxInvalid: 10, invalidTtlMs: 60_000, retainMs: 0 });
    cache.rememberValid("k1", user("u1"), ["user:u1", "org:o1"], 10_000);
    cache.rememberValid("k2", user("u2"), ["user:u2", "org:o1"], 10_000);
    cache.rememberInvalid("bad");
    cache.forget("user:u1");
    expect(cache.lookup("k1").kind).toBe("unknown");
    expect(cache.lookup("k2").kind).toBe("valid");
    cache.forget("org:o1");
    expect(cache.lookup("k2").kind).toBe("unknown");
    cache.rememberValid("k3", user("u3"), ["user:u3"], 10_000);
    cache.forget("*");
    expect(cache.lookup("k3").kind).toBe("unknown");
    // Nothing makes an invalid credential valid: those stay remembered.
    expect(cache.lookup("bad").kind).toBe("invalid");
  });

  it("expires entries at their TTL, and a valid one no later than its own expiry", () => {
    let now = 1_000;
    const cache = new CredentialCache({ maxValid: 10, maxInvalid: 10, invalidTtlMs: 500, retainMs: 0, now: () => now });
    cache.rememberValid("k", user("u1"), [], 10_000, 1_200);
    cache.rememberInvalid("bad");
    now = 1_199;
    expect(cache.lookup("k").kind).toBe("valid");
    expect(cache.lookup("bad").kind).toBe("invalid");
    now = 1_200;
    expect(cache.lookup("k").kind).toBe("unknown");
    now = 1_500;
    expect(cache.lookup("bad").kind).toBe("unknown");
  });

  it("keeps a valid entry past its TTL as stale (look it up again) until the retention ends", () => {
    let now = 0;
    const cache = new CredentialCache({
      maxValid: 10,
      maxInvalid: 10,
      invalidTtlMs: 500,
      retainMs: 1_000,
      now: () => now,
    });
    cache.rememberValid("k", user("u1"), ["user:u1"], 100);
    now = 100;
    expect(cache.lookup("k").kind).toBe("stale");
    now = 1_099;
    expect(cache.lookup("k").kind).toBe("stale");
    now = 1_100;
    expect(cache.lookup("k").kind).toBe("unknown");
    // A changed subject drops it entirely: a revoked key is no longer known as valid.
    cache.rememberValid("k", user("u1"), ["user:u1"], 100);
    cache.forget("user:u1");
    expect(cache.lookup("k").kind).toBe("unknown");
  });
});
