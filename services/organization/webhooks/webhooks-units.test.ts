// The pieces of webhook delivery that need no server: signatures as the Standard Webhooks
// library verifies them, the target policy (URLs, addresses, the connection-time lookup), and
// the retry schedule.
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { MAX_ATTEMPTS, retryAt } from "./dispatcher.js";
import { sendWebhook } from "./send.js";
import { newWebhookSecret, webhookHeaders } from "./signing.js";
import { checkWebhookTarget, parseWebhookUrl, privateAddressReason } from "./target-policy.js";

describe("webhook signatures", () => {
  it("verify with the standardwebhooks library; a changed body or another secret does not", () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const body = JSON.stringify({ type: "message.created", timestamp: "2026-11-27T10:00:00.000Z", data: { x: 1 } });
    const headers = webhookHeaders(secret, "msg_1", body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(body.replace("1", "2"), headers)).toThrow();
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
    // The library refuses a stale timestamp (replays): ours is the attempt's own.
    const stale = webhookHeaders(secret, "msg_1", body, Date.now() - 3_600_000);
    expect(() => new Webhook(secret).verify(body, stale)).toThrow(/timestamp/i);
  });
});

describe("webhook targets", () => {
  it("refuses loopback, private, link-local, metadata and reserved addresses, IPv4-mapped ones too", () => {
    for (const a of [
      "127.0.0.1",
      "10.1.2.3",
      "172.16.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "224.0.0.1",
      "::1",
      "::",
      "fe80::1",
      "fd00:ec2::254",
      "::ffff:127.0.0.1",
      "::ffff:169.254.169.254",
      "::ffff:7f00:1",
      "::ffff:a9fe:a9fe",
    ])
      expect(privateAddressReason(a), a).toBeDefined();
    for (const a of ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
      expect(privateAddressReason(a), a).toBeUndefined();
  });

  it("checks the URL's form: https only (http too when private targets are allowed), no credentials", () => {
    const problem = (raw: string, allow = false) => {
      try {
        parseWebhookUrl(raw, allow);
        return undefined;
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(problem("https://hooks.example.com/a?b=1")).toBeUndefined();
    expect(problem("http://hooks.example.com/")).toBe("url: must be https:");
    expect(problem("http://127.0.0.1:9/", true)).toBeUndefined();
    expect(problem("ftp://x/", true)).toBe("url: must be https: or http:");
    expect(problem("https://u:p@hooks.example.com/")).toBe("url: must not carry a user name or password");
    expect(problem("not a url")).toBe("url: is not an absolute URL");
    expect(problem("")).toBe("url: is required");
    expect(problem(`https://x.example/${"a".repeat(2048)}`)).toBe("url: must be at most 2048 characters");
  });

  it("resolves the host: a name or a literal that leads to a private address is refused", async () => {
    await expect(checkWebhookTarget(new URL("https://localhost/"), false)).rejects.toThrow(/url: the host resolves to/);
    await expect(checkWebhookTarget(new URL("https://[::1]/"), false)).rejects.toThrow(/url: the host resolves to ::1/);
    await expect(checkWebhookTarget(new URL("https://169.254.169.254/latest"), false)).rejects.toThrow(/169\.254/);
    await expect(checkWebhookTarget(new URL("https://no-such-host.invalid/"), false)).rejects.toThrow(
      /does not resolve/,
    );
    await expect(checkWebhookTarget(new URL("http://localhost/"), true)).resolves.toBeUndefined();
  });

  it("checks the address again when it connects: a name that resolves to loopback is not called", async () => {
    const outcome = await sendWebhook(
      { url: "http://localhost:9/", secret: newWebhookSecret(), id: "msg_x", body: "{}" },
      { allowPrivateTargets: false, timeoutMs: 2_000 },
    );
    expect(outcome.status).toBeNull();
    expect(outcome.error).toMatch(/refused: localhost resolves to .*loopback/);
  });
});

describe("the retry schedule", () => {
  it("waits 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (plus up to 10%), then gives up: 8 attempts", () => {
    const now = 1_000_000;
    const delays = [1, 2, 3, 4, 5, 6, 7].map((n) => retryAt(n, 5_000, now)!.getTime() - now);
    const expected = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
    delays.forEach((d, i) => {
      expect(d).toBeGreaterThanOrEqual(expected[i]!);
      expect(d).toBeLessThanOrEqual(expected[i]! * 1.1);
    });
    expect(retryAt(8, 5_000, now)).toBeUndefined();
    expect(MAX_ATTEMPTS).toBe(8);
  });
});
