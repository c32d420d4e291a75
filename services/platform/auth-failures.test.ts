import { describe, expect, it } from "vitest";
import { createTestKv } from "../../test/support/kv.js";
import { AuthFailureLimiter, credentialKindOf } from "./auth-failures.js";
import { DomainError } from "./errors.js";

describe("AuthFailureLimiter", () => {
  it("blocks an address and kind past the limit until the window ends, others not", async () => {
    const kv = await createTestKv();
    try {
      let now = 120_000 * 1_000_000 + 5_000; // 5 s into a window
      const limiter = new AuthFailureLimiter(kv, { perWindow: 3, windowMs: 60_000 }, () => now);
      const address = `10.0.0.${Math.floor(Math.random() * 250)}-${now}`;
      for (let i = 0; i < 3; i++) {
        limiter.check(address, "apk");
        await limiter.fail(address, "apk");
      }
      limiter.check(address, "apk"); // 3 failures: at the limit, not past it
      await limiter.fail(address, "apk");
      let refused: unknown;
      try {
        limiter.check(address, "apk");
      } catch (err) {
        refused = err;
      }
      expect(refused).toBeInstanceOf(DomainError);
      expect((refused as DomainError).kind).toBe("resource_exhausted");
      // The seconds left in the window, not since the first failure.
      expect((refused as DomainError).headers).toEqual({ "retry-after": "55" });
      // Another kind of credential, or another address, is not blocked.
      limiter.check(address, "aps");
      limiter.check(`${address}x`, "apk");
      now += 55_000;
      limiter.check(address, "apk");
    } finally {
      await kv.close();
    }
  });

  it("names the kind of a credential by its prefix", () => {
    expect(credentialKindOf("apk_abc")).toBe("apk");
    expect(credentialKindOf("aps_abc")).toBe("aps");
    expect(credentialKindOf("eyJhbGciOi.x.y")).toBe("jwt");
  });
});
