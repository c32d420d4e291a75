// The web module through the REST edge: the dashboard's page and assets with their caching
// headers, without a credential; a name outside the build is a 404, never a file elsewhere; and
// the same service on the public gRPC port only.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetDashboardRequestSchema, WebService } from "../gen/agentplane/web/v1/web_pb.js";
import { expectErrorBody } from "./support/error-body.js";
import { grpcClient } from "./support/grpc.js";
import { startTestServer, testServerConfig, type TestServer } from "./support/server.js";

const PAGE = '<!doctype html><title>agentplane</title><script type="module" src="/assets/app-3f2a.js"></script>';
// Past the 8 KiB from which text goes compressed.
const SCRIPT = "console.log('agentplane');\n".repeat(1000);

async function get(server: TestServer, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.restUrl}${path}`, { headers });
  const bytes = Buffer.from(await res.arrayBuffer());
  const text = bytes.toString("utf8");
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, bytes, text, json };
}

describe("web module", () => {
  let dir: string;
  let server: TestServer;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "agentplane-dashboard-"));
    mkdirSync(join(dir, "assets"));
    writeFileSync(join(dir, "index.html"), PAGE);
    writeFileSync(join(dir, "assets", "app-3f2a.js"), SCRIPT);
    // A file beside the build, which no request may reach.
    writeFileSync(join(dir, "secret.txt"), "not served");
    server = await startTestServer({ DASHBOARD_DIR: dir });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves the page at / without a credential, revalidated on every load", async () => {
    const res = await get(server, "/");
    expect(res.status).toBe(200);
    expect(res.text).toBe(PAGE);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    const etag = res.headers.get("etag");
    expect(etag).toMatch(/^"[\w-]+"$/);

    const again = await get(server, "/", { "if-none-match": etag! });
    expect(again.status).toBe(304);
    expect(again.bytes.length).toBe(0);
    expect(again.headers.get("etag")).toBe(etag);
  });

  it("serves assets as immutable, compressed for a client that takes gzip", async () => {
    const plain = await get(server, "/assets/app-3f2a.js", { "accept-encoding": "identity" });
    expect(plain.status).toBe(200);
    expect(plain.text).toBe(SCRIPT);
    expect(plain.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(plain.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(plain.headers.get("vary")).toBe("Accept-Encoding");
    expect(plain.headers.get("content-encoding")).toBeNull();

    // fetch would inflate the body itself; node:http shows the bytes as sent.
    const { request } = await import("node:http");
    const gz = await new Promise<{ headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
      request(`${server.restUrl}/assets/app-3f2a.js`, { headers: { "accept-encoding": "gzip" } }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      })
        .on("error", reject)
        .end();
    });
    expect(gz.headers["content-encoding"]).toBe("gzip");
    expect(gz.headers.etag).toBe(`W/${plain.headers.get("etag")}`);
    expect(gz.body.length).toBeLessThan(SCRIPT.length / 10);
    expect(gunzipSync(gz.body).toString("utf8")).toBe(SCRIPT);
  });

  it("answers 404 with the error body for names outside the build's assets", async () => {
    expectErrorBody(await get(server, "/assets/missing.js"), 404, 'asset "missing.js" not found');
    // Neither the file beside assets/ nor one above the build is reachable.
    expect((await get(server, "/assets/../secret.txt")).status).toBe(404);
    expect((await get(server, "/assets/%2E%2E%2Fsecret.txt")).status).toBe(404);
    expect((await get(server, "/assets/..%2Fsecret.txt")).status).toBe(404);
  });

  it("serves the same page over gRPC on the public port, and nothing of it on the internal one", async () => {
    const pub = grpcClient(WebService, server.grpcUrl);
    const { messages } = await pub.serverStream(WebService.method.getDashboard, {});
    expect(Buffer.concat(messages.map((m) => m.data)).toString("utf8")).toBe(PAGE);
    expect(messages[0]!.contentType).toBe("text/html; charset=utf-8");
    pub.close();

    const internal = grpcClient(WebService, server.internalGrpcUrl);
    await expect(internal.serverStream(WebService.method.getDashboard, {})).rejects.toMatchObject({ code: 12 });
    internal.close();
    expect(GetDashboardRequestSchema.typeName).toBe("agentplane.web.v1.GetDashboardRequest");
  });
});

describe("web module without a dashboard build", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ DASHBOARD_DIR: join(tmpdir(), "agentplane-no-such-build") });
  });
  afterAll(() => server?.close());

  it("says at / how to build it", async () => {
    expectErrorBody(await get(server, "/"), 404, "npm run build:web");
  });
});

describe("DASHBOARD_DIR", () => {
  it("must be absolute", () => {
    expect(() => testServerConfig({ DASHBOARD_DIR: "web/dist" })).toThrow(/DASHBOARD_DIR must be an absolute path/);
  });
});
