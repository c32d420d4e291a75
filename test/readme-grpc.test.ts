// The README's gRPC section runs as written against a live server: its grpcurl lines (through
// support/grpcurl.ts, the part of grpcurl they use, built on a grpc-js reflection client) and
// its TypeScript example (a file of its own, run with tsx). Only the ports change: the README
// names the defaults (8081, 8082), the test server listens where the system put it.
import { execFile } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { ALL_MODULES, SCOPES } from "../services/modules.js";
import { isPublic } from "../services/platform/module.js";
import { bearer, createTestOrg, createTestServiceAccount, createTestUser, type TestUser } from "./support/fixtures.js";
import { grpcurl, shellWords } from "./support/grpcurl.js";
import { startTestServer, type TestServer } from "./support/server.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PLATFORM = [
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
];

/** The README's "## gRPC" section. */
function grpcSection(): string {
  const readme = readFileSync(`${ROOT}README.md`, "utf8");
  const start = readme.indexOf("\n## gRPC\n");
  if (start === -1) throw new Error("README.md has no ## gRPC section");
  const end = readme.indexOf("\n## ", start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

/** The code blocks of a language in `markdown`, in order. */
function codeBlocks(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, "g"))].map((m) => m[1]!);
}

const DEFAULT_PORTS = { "127.0.0.1:8081": "public", "127.0.0.1:8082": "internal" } as const;

describe("README: gRPC", () => {
  let server: TestServer;
  let owner: TestUser;
  let token: string;
  const titles = ["first from the README test", "second from the README test"];

  beforeAll(async () => {
    server = await startTestServer();
    const orgId = await createTestOrg(server.platform.db, "README gRPC");
    owner = await createTestUser(server.platform.db, orgId, "owner");
    token = await createTestServiceAccount(server.platform.db, { scopes: ["sessions.runner"] });
    const sessions = createClient(SessionService, createGrpcTransport({ baseUrl: server.grpcUrl }));
    for (const title of titles) await sessions.createSession({ title }, { headers: bearer(owner.key) });
  });

  afterAll(async () => {
    await server?.close();
  });

  const urlOf = (address: string) => {
    const port = DEFAULT_PORTS[address as keyof typeof DEFAULT_PORTS];
    if (port === undefined) throw new Error(`the README names ${address}, not a default gRPC port`);
    return port === "public" ? server.grpcUrl : server.internalGrpcUrl;
  };

  it("runs the grpcurl session: list, describe, a call with the key, the internal port's list", async () => {
    const blocks = codeBlocks(grpcSection(), "sh");
    expect(blocks).toHaveLength(1);
    const lines = blocks[0]!.split("\n").filter((l) => l.trim() !== "" && !l.startsWith("#"));
    // The README takes the key from the demo's file and makes a service account with the CLI;
    // here they are the test user's key and a test account's token, with the scope it names.
    const assignments = lines.filter((l) => /^[A-Z]+=/.test(l));
    expect(assignments).toEqual([
      "KEY=$(cat .data/demo-api-key)",
      "TOKEN=$(npx agentplane service-account create --name grpcurl --scopes sessions.runner)",
    ]);
    expect(SCOPES).toContain("sessions.runner");
    const variables = { KEY: owner.key, TOKEN: token };
    const results = [];
    for (const line of lines.filter((l) => !assignments.includes(l)))
      results.push(await grpcurl(shellWords(line, variables), urlOf));
    expect(results).toHaveLength(4);
    const [list, describe, call, internalList] = results;

    const publicServices = ALL_MODULES.flatMap((m) => m.services.filter(isPublic).map((s) => s.service.typeName));
    expect(list!.output.split("\n")).toEqual([...publicServices, ...PLATFORM].sort());
    expect(describe!.output).toBe(
      "agentplane.sessions.v1alpha1.SessionService.ListSessions is a method: rpc ListSessions ( .ListSessionsRequest ) returns ( .ListSessionsResponse )",
    );
    const listed = (call!.response as { sessions: { title: string }[] }).sessions.map((s) => s.title);
    expect(listed.sort()).toEqual([...titles].sort());
    const internalServices = ALL_MODULES.flatMap((m) =>
      m.services.filter((s) => !isPublic(s)).map((s) => s.service.typeName),
    );
    expect(internalList!.output.split("\n")).toEqual([...internalServices, ...PLATFORM].sort());
  });

  it("the grpcurl call fails as grpcurl would without the key", async () => {
    const line = shellWords(
      codeBlocks(grpcSection(), "sh")[0]!
        .split("\n")
        .find((l) => l.includes("/ListSessions"))!,
      { KEY: "apk_not_a_key" },
    );
    await expect(grpcurl(line, urlOf)).rejects.toMatchObject({ code: 16 });
  });

  it("runs the TypeScript example: it prints the organization's sessions", async () => {
    const blocks = codeBlocks(grpcSection(), "ts");
    expect(blocks).toHaveLength(1);
    const source = blocks[0]!;
    expect(source).toContain('"http://127.0.0.1:8081"');
    // Beside README.md, so that its ./gen import and the packages resolve as they do for a reader
    // in the repository; removed afterwards.
    const file = `${ROOT}.readme-grpc-example-${process.pid}.ts`;
    writeFileSync(file, source.replace('"http://127.0.0.1:8081"', JSON.stringify(server.grpcUrl)));
    try {
      const { stdout } = await promisify(execFile)(`${ROOT}node_modules/.bin/tsx`, [file], {
        cwd: ROOT,
        env: { ...process.env, AGENTPLANE_API_KEY: owner.key },
        timeout: 60_000,
      });
      const printed = stdout.trim().split("\n");
      expect(printed).toHaveLength(titles.length);
      for (const line of printed) expect(line).toMatch(/^\S+ (first|second) from the README test$/);
      expect(printed.map((l) => l.slice(l.indexOf(" ") + 1)).sort()).toEqual([...titles].sort());
    } finally {
      rmSync(file, { force: true });
    }
  });
});
