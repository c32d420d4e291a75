// The rate limiter's headers through a router transport, on the in-process store and (with
// TEST_REDIS_URL) on Redis: RateLimit-Reset and Retry-After are the seconds left in the current
// clock-aligned window, whenever in the window the credential's first request came.
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import { afterAll, describe, expect, it } from "vitest";
import { EdgeTestService } from "../../gen/agentplane/edgetest/v1/edgetest_pb.js";
import { testLogger } from "../../test/support/database.js";
import { createTestKv } from "../../test/support/kv.js";
import { kPrincipal, type Principal } from "./context.js";
import type { KeyValueStore } from "./kv.js";
import { MemoryKeyValueStore } from "./kv-memory.js";
import { rateLimitInterceptor } from "./rate-limit.js";
import { requestContextInterceptor } from "./request-context.js";

const WINDOW_MS = 60_000;
/** Some window start, far from the real clock so that no other run shares its keys. */
const T0 = 1_000_000 * WINDOW_MS;

const stores: Array<[string, () => Promise<KeyValueStore>]> = [
  ["the in-process store", async () => new MemoryKeyValueStore()],
];
if (process.env.TEST_REDIS_URL) stores.push(["Redis", () => createTestKv()]);

describe.each(stores)("rate limit headers on %s", (_name, open) => {
  const opened: KeyValueStore[] = [];
  afterAll(() => Promise.all(opened.map((kv) => kv.close())));

  /** A client whose calls run at the fake clock's time, as one credential allowed `limit` a minute. */
  async function caller(limit: number) {
    const kv = await open();
    opened.push(kv);
    const clock = { now: T0 };
    const principal: Principal = {
      orgId: "o",
      userId: "u",
      role: "owner",
      credentialKind: "api_key",
      credentialId: `key-${Math.random()}`,
      rateLimitPerMinute: limit,
    };
    const transport = createRouterTransport(({ service }) => service(EdgeTestService, { fail: async () => ({}) }), {
      router: {
        // As in the server: the request context (error mapping) outermost, then the caller.
        interceptors: [
          requestContextInterceptor(testLogger()),
          (next) => (req) => {
            req.contextValues.set(kPrincipal, principal);
            return next(req);
          },
          rateLimitInterceptor(kv, WINDOW_MS, () => clock.now),
        ],
      },
    });
    const client = createClient(EdgeTestService, transport);
    /** Calls at `at` ms into the first window; the rate-limit headers of the answer or refusal. */
    const call = async (at: number) => {
      clock.now = T0 + at;
      let headers = new Headers();
      try {
        await client.fail({}, { onHeader: (h) => (headers = h) });
        return {
          ok: true,
          reset: headers.get("ratelimit-reset"),
          remaining: headers.get("ratelimit-remaining"),
          retryAfter: headers.get("retry-after"),
        };
      } catch (err) {
        const error = ConnectError.from(err);
        expect(error.code).toBe(Code.ResourceExhausted);
        return {
          ok: false,
          reset: error.metadata.get("ratelimit-reset"),
          remaining: error.metadata.get("ratelimit-remaining"),
          retryAfter: error.metadata.get("retry-after"),
          message: error.rawMessage,
        };
      }
    };
    return call;
  }

  it("reports the seconds left in the window, not a minute from the first request", async () => {
    const call = await caller(100);
    // First request 59.5 s into the window: the budget comes back in half a second.
    expect(await call(59_500)).toMatchObject({ ok: true, reset: "1", remaining: "99" });
    // The next window starts afresh, with its whole minute ahead.
    expect(await call(60_000)).toMatchObject({ ok: true, reset: "60", remaining: "99" });
    expect(await call(60_000 + 20_250)).toMatchObject({ ok: true, reset: "40", remaining: "98" });
  });

  it("gives Retry-After as the seconds left in the window on a refusal, and lets the caller in after it", async () => {
    const call = await caller(2);
    expect(await call(10_000)).toMatchObject({ ok: true, reset: "50", remaining: "1" });
    expect(await call(30_000)).toMatchObject({ ok: true, reset: "30", remaining: "0" });
    const refused = await call(45_000);
    expect(refused).toMatchObject({ ok: false, reset: "15", retryAfter: "15", remaining: "0" });
    expect(refused.message).toBe("rate limit of 2 requests per minute exceeded; retry after 15 s");
    // Never 0: a client told to wait 0 s would spin until the window turns.
    expect(await call(59_999)).toMatchObject({ ok: false, retryAfter: "1" });
    // Retry-After later, as told: allowed again.
    expect(await call(45_000 + 15_000)).toMatchObject({ ok: true, remaining: "1", reset: "60" });
  });
});
