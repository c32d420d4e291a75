// The retry rule (src/retry.ts) on its own, the service list against the server's modules, and
// the browser entry point's transports.
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { isPublic } from "../../../services/platform/module.js";
import { ALL_MODULES } from "../../../services/modules.js";
import { createAgentplaneClient as createBrowserClient, webTransport } from "../src/browser.js";
import {
  backoffMs,
  DEFAULT_RETRY,
  isRetryable,
  isSafeToRepeat,
  neverReachedServer,
  PUBLIC_SERVICES,
} from "../src/index.js";

const { sessions, organization, analytics } = PUBLIC_SERVICES;

describe("which calls are retried", () => {
  it("takes a method bound to GET for a read, any other for a write", () => {
    expect(isSafeToRepeat(sessions.method.listSessions)).toBe(true);
    expect(isSafeToRepeat(sessions.method.getSession)).toBe(true);
    expect(isSafeToRepeat(organization.method.listUsers)).toBe(true);
    expect(isSafeToRepeat(analytics.method.getTokens)).toBe(false); // no REST binding of its own: a typed twin
    expect(isSafeToRepeat(sessions.method.createSession)).toBe(false);
    expect(isSafeToRepeat(sessions.method.postMessage)).toBe(false);
    expect(isSafeToRepeat(sessions.method.deleteSession)).toBe(false);
  });

  it("retries a read on UNAVAILABLE, a write only when the request never left", () => {
    const unavailable = new ConnectError("down", Code.Unavailable);
    const refused = new ConnectError("connect ECONNREFUSED", Code.Unavailable, undefined, undefined, {
      code: "ECONNREFUSED",
    });
    const refusedStream = new ConnectError(
      "http/2 stream closed with error code REFUSED_STREAM (0x7)",
      Code.Unavailable,
    );
    expect(isRetryable(unavailable, true)).toBe(true);
    expect(isRetryable(unavailable, false)).toBe(false);
    expect(isRetryable(refused, false)).toBe(true);
    expect(isRetryable(refusedStream, false)).toBe(true);
    expect(neverReachedServer(unavailable)).toBe(false);
    for (const code of [Code.Internal, Code.DeadlineExceeded, Code.ResourceExhausted, Code.Aborted, Code.NotFound])
      expect(isRetryable(new ConnectError("no", code), true), Code[code]).toBe(false);
  });

  it("waits a random time under a bound that doubles up to maxDelayMs", () => {
    const max = () => 0.999999;
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffMs(n, DEFAULT_RETRY, max))).toEqual([99, 199, 399, 799, 1599, 1999]);
    expect(backoffMs(3, DEFAULT_RETRY, () => 0)).toBe(0);
    const waits = Array.from({ length: 200 }, () => backoffMs(4, DEFAULT_RETRY));
    expect(Math.max(...waits)).toBeLessThan(800);
    expect(new Set(waits).size).toBeGreaterThan(50); // jitter: not one value
  });
});

describe("the services", () => {
  it("are the server's public services of the five areas (not the OTLP receivers)", () => {
    const areas: string[] = ["analytics", "readiness", "sessions", "computers", "organization"];
    const served = ALL_MODULES.filter((m) => areas.includes(m.name)).flatMap((m) =>
      m.services.filter(isPublic).map((s) => s.service.typeName),
    );
    expect(
      Object.values(PUBLIC_SERVICES)
        .map((s) => s.typeName)
        .sort(),
    ).toEqual(served.filter((s) => s.startsWith("agentplane.") && !s.endsWith(".OtlpHttpService")).sort());
  });
});

describe("the browser entry point", () => {
  const settings = {
    baseUrl: "https://api.example.com",
    defaultTimeoutMs: 1000,
    useBinaryFormat: true,
    interceptors: [],
  };

  it("builds fetch transports for Connect and gRPC-Web and refuses gRPC", () => {
    expect(webTransport({ ...settings, protocol: "connect" })).toBeDefined();
    expect(webTransport({ ...settings, protocol: "grpc-web" })).toBeDefined();
    expect(() => webTransport({ ...settings, protocol: "grpc" })).toThrow(/not available in browsers/);
    expect(() => createBrowserClient({ baseUrl: settings.baseUrl, apiKey: "apk_x", protocol: "grpc" })).toThrow(
      /not available in browsers/,
    );
    expect(createBrowserClient({ baseUrl: settings.baseUrl, apiKey: "apk_x" }).sessions.listSessions).toBeTypeOf(
      "function",
    );
  });
});
