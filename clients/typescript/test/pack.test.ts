// The package as a user gets it: built (`npm run build -w clients/typescript`), packed with
// `npm pack`, installed from the tarball into an empty folder (its dependencies from npm's cache
// when there), then imported there by a script that lists sessions from the running server, and
// by a TypeScript file type-checked against the declarations it ships.
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestOrg, createTestUser, type TestUser } from "../../../test/support/fixtures.js";
import { startTestServer, type TestServer } from "../../../test/support/server.js";

// Asynchronous on purpose: the server runs in this process and must go on answering meanwhile.
const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "../../..");
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");

let server: TestServer;
let owner: TestUser;
let dir: string;

beforeAll(async () => {
  server = await startTestServer();
  owner = await createTestUser(server.database.db, await createTestOrg(server.database.db), "member");
  dir = await mkdtemp(join(tmpdir(), "agentplane-client-pack-"));
});

afterAll(async () => {
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const LIST_SESSIONS = `
import { createAgentplaneClient } from "@agentplane/client";
const client = createAgentplaneClient({ baseUrl: process.env.BASE_URL, apiKey: process.env.API_KEY, protocol: process.env.PROTOCOL });
const created = await client.sessions.createSession({ title: "from the tarball" });
const listed = await client.sessions.listSessions({});
console.log(JSON.stringify({ created: created.sessionId, listed: listed.sessions.map((s) => [s.sessionId, s.title]) }));
`;

const TYPED_USE = `
import { createAgentplaneClient, type sessions } from "@agentplane/client";
const client = createAgentplaneClient({ baseUrl: "http://127.0.0.1:8081", apiKey: "apk_x", protocol: "grpc-web" });
const listed: sessions.ListSessionsResponse = await client.sessions.listSessions({ limit: "5" }, { timeoutMs: 1000 });
export const ids: string[] = listed.sessions.map((s) => s.sessionId);
// @ts-expect-error the clients are typed: no such method
client.sessions.listSessionz({});
`;

it("builds, packs, installs from the tarball and lists sessions from the server", { timeout: 120_000 }, async () => {
  await run("npm", ["run", "build", "-w", "clients/typescript"], { cwd: ROOT });
  const packDir = join(dir, "pack");
  await mkdir(packDir);
  await run("npm", ["pack", "-w", "clients/typescript", "--pack-destination", packDir, "--silent"], { cwd: ROOT });
  const [tarball] = (await readdir(packDir)).filter((f) => f.endsWith(".tgz"));
  expect(tarball).toMatch(/^agentplane-client-[\d.]+\.tgz$/);
  const { stdout: listing } = await run("tar", ["-tzf", join(packDir, tarball!)]);
  const files = listing.split("\n").filter((f) => f !== "");
  // Compiled code and declarations, the generated code the client imports among them; no sources.
  expect(files).toContain("package/dist/src/index.js");
  expect(files).toContain("package/dist/src/browser.d.ts");
  expect(files).toContain("package/dist/gen/agentplane/sessions/v1alpha1/sessions_pb.js");
  expect(files.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([]);
  expect(files.some((f) => f.includes("/test/") || f.includes("edgetest") || f.includes("opentelemetry"))).toBe(false);

  const app = join(dir, "app");
  await mkdir(app);
  await writeFile(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", join(packDir, tarball!)], { cwd: app });
  await writeFile(join(app, "list-sessions.mjs"), LIST_SESSIONS);
  await writeFile(join(app, "typed-use.ts"), TYPED_USE);

  const env = { ...process.env, BASE_URL: server.grpcUrl, API_KEY: owner.key };
  const [connect, grpcWeb] = await Promise.all([
    run("node", ["list-sessions.mjs"], { cwd: app, env: { ...env, PROTOCOL: "connect" } }),
    run("node", ["list-sessions.mjs"], { cwd: app, env: { ...env, PROTOCOL: "grpc-web" } }),
    // The declarations it ships type a user's code (and refuse a method that does not exist).
    run(
      "node",
      [TSC, "--noEmit", "--strict", "--skipLibCheck", "--target", "es2022", "--module", "nodenext"]
        .concat(["--moduleResolution", "nodenext", "--lib", "es2023,dom", "--types", "node"])
        .concat(["--typeRoots", join(ROOT, "node_modules/@types"), "typed-use.ts"]),
      { cwd: app },
    ),
  ]);
  for (const { stdout } of [connect, grpcWeb]) {
    const out = JSON.parse(stdout) as { created: string; listed: [string, string][] };
    expect(out.listed).toContainEqual([out.created, "from the tarball"]);
  }
});
