import { describe, expect, it } from "vitest";
import {
  ANY_WORKLOAD,
  API_KEY_ONLY,
  API_KEY_OR_JWT,
  API_KEY_OR_WORKLOAD,
  authorize,
  clientAddressOf,
  internal,
  OPEN,
} from "./auth.js";
import type { Caller } from "./context.js";
import { DomainError } from "./errors.js";

const apiKey: Caller = {
  kind: "user",
  principal: {
    orgId: "o",
    userId: "u",
    role: "owner",
    credentialKind: "api_key",
    credentialId: "key:1",
    rateLimitPerMinute: 60,
  },
};
const jwt: Caller = {
  kind: "user",
  principal: { ...apiKey.principal, credentialKind: "jwt", credentialId: "jwt:o:u" },
};
const workload = (scopes: string[]): Caller => ({
  kind: "workload",
  workload: { accountId: "a", name: "n", orgId: undefined, scopes, credentialId: "account:a" },
});

function refusal(f: () => void): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    return `${(err as DomainError).kind}: ${(err as DomainError).message}`;
  }
  return "allowed";
}

describe("authorize", () => {
  const telemetry = internal({ Ingest: "analytics.ingest", Rollup: "analytics.rollup" }, ["Ingest"]);

  it("lets a workload call exactly the methods its scopes name", () => {
    expect(refusal(() => authorize(telemetry, "T", "Ingest", workload(["analytics.ingest"])))).toBe("allowed");
    expect(refusal(() => authorize(telemetry, "T", "Rollup", workload(["analytics.ingest"])))).toBe(
      "permission_denied: T/Rollup needs a service account with the analytics.rollup scope",
    );
  });

  it("lets any service account, whatever its scopes, and no user call a workload-only service", () => {
    const reflection = "grpc.reflection.v1.ServerReflection";
    for (const scopes of [[], ["sessions.runner"], ["analytics.ingest", "computers.host"]])
      expect(refusal(() => authorize(ANY_WORKLOAD, reflection, "ServerReflectionInfo", workload(scopes)))).toBe(
        "allowed",
      );
    for (const user of [apiKey, jwt])
      expect(refusal(() => authorize(ANY_WORKLOAD, reflection, "ServerReflectionInfo", user))).toBe(
        `permission_denied: ${reflection}/ServerReflectionInfo needs a service account token; API keys are not accepted`,
      );
  });

  it("lets a user's key call only the methods the policy opens to users", () => {
    expect(refusal(() => authorize(telemetry, "T", "Ingest", apiKey))).toBe("allowed");
    expect(refusal(() => authorize(telemetry, "T", "Rollup", apiKey))).toMatch(
      /^permission_denied: T\/Rollup needs a service account token with the analytics.rollup scope/,
    );
  });

  it("fails closed on a method the policy does not name", () => {
    expect(refusal(() => authorize(telemetry, "T", "Export", workload(["analytics.ingest", "analytics.rollup"])))).toBe(
      "permission_denied: no access policy for T/Export",
    );
  });

  it("keeps service-account tokens off the public services and JWTs off API-key-only ones", () => {
    expect(refusal(() => authorize(API_KEY_OR_JWT, "S", "Get", workload(["sessions.runner"])))).toMatch(
      /^unauthenticated: service account tokens are for the internal services/,
    );
    expect(refusal(() => authorize(API_KEY_ONLY, "A", "Get", jwt))).toBe("unauthenticated: invalid or revoked API key");
    expect(refusal(() => authorize(API_KEY_OR_JWT, "S", "Get", jwt))).toBe("allowed");
    expect(refusal(() => authorize(OPEN, "H", "Check", workload([])))).toBe("allowed");
  });

  it("lets a public service that names a workload scope (the OTLP receiver) take API keys and that scope only", () => {
    const otlp = API_KEY_OR_WORKLOAD("analytics.ingest");
    expect(refusal(() => authorize(otlp, "L", "Export", apiKey))).toBe("allowed");
    expect(refusal(() => authorize(otlp, "L", "Export", workload(["analytics.ingest"])))).toBe("allowed");
    expect(refusal(() => authorize(otlp, "L", "Export", workload(["analytics.rollup"])))).toBe(
      "permission_denied: L/Export needs a service account with the analytics.ingest scope",
    );
    expect(refusal(() => authorize(otlp, "L", "Export", jwt))).toBe(
      "unauthenticated: invalid or revoked API key or service account token",
    );
  });
});

describe("clientAddressOf", () => {
  it("takes the last X-Forwarded-For hop only behind an edge", () => {
    expect(clientAddressOf("1.1.1.1, 2.2.2.2", "10.0.0.1", true)).toBe("2.2.2.2");
    expect(clientAddressOf("1.1.1.1, 2.2.2.2", "10.0.0.1", false)).toBe("10.0.0.1");
    expect(clientAddressOf(undefined, "10.0.0.1", true)).toBe("10.0.0.1");
    expect(clientAddressOf(" , ", undefined, true)).toBe("unknown");
  });
});
