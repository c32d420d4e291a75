// GET /openapi.json and GET /docs through the REST edge: the generated document as it is in
// gen/openapi/, and the API reference page with Scalar's bundle served from this server (no other
// origin), open to a client without a credential, with their caching headers.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadOpenApi } from "./support/openapi.js";
import { startTestServer, type TestServer } from "./support/server.js";

let server: TestServer;
const scalarDir = join(dirname(createRequire(import.meta.url).resolve("@scalar/api-reference")), "..");
const scalarVersion = JSON.parse(readFileSync(join(scalarDir, "package.json"), "utf8")).version as string;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const get = (path: string, headers: Record<string, string> = {}) => fetch(server.restUrl + path, { headers });

describe("GET /openapi.json", () => {
  it("answers the generated document, without a credential", async () => {
    const res = await get("/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(await res.json()).toEqual(loadOpenApi());
  });

  it("answers 304 to If-None-Match with its ETag", async () => {
    const first = await get("/openapi.json", { "accept-encoding": "identity" });
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^"/);
    const again = await get("/openapi.json", { "if-none-match": etag! });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
  });
});

describe("GET /docs", () => {
  it("is the reference page: the document rendered by Scalar's bundle from this origin", async () => {
    const res = await get("/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    const html = await res.text();
    expect(html).toContain('data-url="/openapi.json"');
    // Nothing from another origin: no absolute URL at all, and no CDN fonts or telemetry.
    expect(html).not.toMatch(/https?:\/\//);
    const config = JSON.parse(html.match(/data-configuration='([^']*)'/)![1]!.replaceAll("&#39;", "'"));
    expect(config).toMatchObject({ withDefaultFonts: false, telemetry: false });
    const scripts = [...html.matchAll(/<script[^>]*src="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts).toEqual([`/assets/scalar-api-reference-${scalarVersion}.js`]);
  });

  it("serves Scalar's standalone bundle as an immutable asset", async () => {
    const res = await get(`/assets/scalar-api-reference-${scalarVersion}.js`, { "accept-encoding": "identity" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.equals(readFileSync(join(scalarDir, "dist", "browser", "standalone.js")))).toBe(true);
  });

  it("an unknown asset is still a 404", async () => {
    const res = await get("/assets/scalar-api-reference-0.0.0.js");
    expect(res.status).toBe(404);
  });
});
