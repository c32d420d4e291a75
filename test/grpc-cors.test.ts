// Browsers on the public gRPC port (CORS_ALLOWED_ORIGINS, services/platform/cors.ts): preflights
// answered for an allowed origin and refused for another, Connect and gRPC-Web calls from an
// allowed origin answered with the CORS headers (refusals before the body included), through
// @agentplane/client and raw HTTP/2.
import { connect as http2Connect, type IncomingHttpHeaders } from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAgentplaneClient, type Protocol } from "../clients/typescript/src/index.js";
import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS, createCors } from "../services/platform/cors.js";
import { createTestOrg, createTestUser, type TestUser } from "./support/fixtures.js";
import { startTestServer, type TestServer } from "./support/server.js";

const ALLOWED = "https://app.example.test";
const OTHER = "https://evil.example.test";
const LIST_SESSIONS = "/agentplane.sessions.v1alpha1.SessionService/ListSessions";

let server: TestServer;
let member: TestUser;

beforeAll(async () => {
  server = await startTestServer({ CORS_ALLOWED_ORIGINS: `${ALLOWED},http://localhost:5173` });
  member = await createTestUser(server.database.db, await createTestOrg(server.database.db), "member");
});

afterAll(async () => {
  await server?.close();
});

/** One raw HTTP/2 request to the public gRPC port: its response headers. */
function h2Request(headers: Record<string, string>): Promise<IncomingHttpHeaders> {
  return new Promise((resolve, reject) => {
    const session = http2Connect(server.grpcUrl);
    session.on("error", reject);
    const req = session.request(headers, { endStream: true });
    req.on("response", (h) => {
      req.resume();
      req.on("end", () => {
        session.close();
        resolve(h);
      });
    });
    req.on("error", reject);
  });
}

const preflight = (origin: string) =>
  h2Request({
    ":method": "OPTIONS",
    ":path": LIST_SESSIONS,
    origin,
    "access-control-request-method": "POST",
    "access-control-request-headers": "authorization,content-type,connect-protocol-version,connect-timeout-ms",
  });

/** A call's response headers (or, for a refusal, its error's metadata, where they are). */
async function callHeaders(
  protocol: Protocol,
  origin: string,
  apiKey = member.key,
): Promise<{ headers: Headers; code: Code | undefined; sessions?: number }> {
  const client = createAgentplaneClient({ baseUrl: server.grpcUrl, apiKey, protocol, retry: false });
  let headers = new Headers();
  try {
    const res = await client.sessions.listSessions({}, { headers: { origin }, onHeader: (h) => (headers = h) });
    return { headers, code: undefined, sessions: res.sessions.length };
  } catch (err) {
    const e = ConnectError.from(err);
    return { headers: e.metadata, code: e.code };
  }
}

describe("CORS on the public gRPC port", () => {
  it("answers a preflight from an allowed origin with what Connect and gRPC-Web need", async () => {
    const h = await preflight(ALLOWED);
    expect(h[":status"]).toBe(204);
    expect(h["access-control-allow-origin"]).toBe(ALLOWED);
    expect(String(h["access-control-allow-methods"]).split(", ")).toEqual(["POST", "GET"]);
    const allowed = String(h["access-control-allow-headers"]).toLowerCase().split(", ");
    for (const name of ["authorization", "content-type", "connect-protocol-version", "connect-timeout-ms"])
      expect(allowed).toContain(name);
    for (const name of ["x-grpc-web", "x-user-agent", "grpc-timeout"]) expect(allowed).toContain(name);
    expect(Number(h["access-control-max-age"])).toBeGreaterThan(0);
    expect(String(h.vary)).toMatch(/Origin/);
  });

  it("refuses a preflight from another origin: no Access-Control-Allow-Origin", async () => {
    const h = await preflight(OTHER);
    expect(h[":status"]).toBe(403);
    expect(h["access-control-allow-origin"]).toBeUndefined();
    expect(h["access-control-allow-headers"]).toBeUndefined();
  });

  it.each(["connect", "grpc-web"] as const)(
    "answers a %s call from an allowed origin with the origin and the headers a script may read",
    async (protocol) => {
      const { headers, code, sessions } = await callHeaders(protocol, ALLOWED);
      expect(code).toBeUndefined();
      expect(sessions).toBe(0);
      expect(headers.get("access-control-allow-origin")).toBe(ALLOWED);
      const exposed = (headers.get("access-control-expose-headers") ?? "").toLowerCase().split(", ");
      for (const name of ["grpc-status", "grpc-message", "x-request-id", "ratelimit-remaining"])
        expect(exposed).toContain(name);
    },
  );

  it.each(["connect", "grpc-web"] as const)(
    "carries them on a %s refusal before the body too (a made-up key), so a script can read it",
    async (protocol) => {
      const { headers, code } = await callHeaders(protocol, ALLOWED, "apk_made_up_key_0000");
      expect(code).toBe(Code.Unauthenticated);
      expect(headers.get("access-control-allow-origin")).toBe(ALLOWED);
    },
  );

  it("serves another origin's call (CORS is the browser's check) without allowing it to be read", async () => {
    const { headers, code } = await callHeaders("connect", OTHER);
    expect(code).toBeUndefined();
    expect(headers.get("access-control-allow-origin")).toBeNull();
  });

  it("the typed client over gRPC-Web lists the sessions it created", async () => {
    const client = createAgentplaneClient({ baseUrl: server.grpcUrl, apiKey: member.key, protocol: "grpc-web" });
    const created = await client.sessions.createSession({ title: "from a browser" }, { headers: { origin: ALLOWED } });
    const listed = await client.sessions.listSessions({}, { headers: { origin: ALLOWED } });
    expect(listed.sessions.map((s) => s.sessionId)).toContain(created.sessionId);
  });

  it("is off without origins: nothing answers a preflight with CORS headers", () => {
    expect(createCors([])).toBeUndefined();
    expect(CORS_ALLOWED_HEADERS).toContain("Authorization");
    expect(CORS_EXPOSED_HEADERS).toContain("Grpc-Status");
  });
});
