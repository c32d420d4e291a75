// The Dockerfile, checked statically (there is no container engine on our machines, so the image
// is never built here): a multi-stage build whose last stage runs the compiled JavaScript as a
// non-root user with production dependencies only, and whose build context (.dockerignore)
// carries exactly what the stages copy.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const ROOT = new URL("../../", import.meta.url);
const dockerfile = readFileSync(new URL("Dockerfile", ROOT), "utf8");
const dockerignore = readFileSync(new URL(".dockerignore", ROOT), "utf8");

interface Instruction {
  readonly op: string;
  readonly args: string;
}

interface Stage {
  readonly name: string;
  readonly from: string;
  readonly instructions: Instruction[];
}

/** Instructions grouped by stage, line continuations joined, ARG defaults substituted into FROM. */
function parseDockerfile(text: string): Stage[] {
  const joined = text
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const line of joined) {
    const [, op = "", rest = ""] = /^(\w+)\s+(.*)$/.exec(line) ?? [];
    const upper = op.toUpperCase();
    if (upper === "ARG" && stages.length === 0) {
      const [k, v = ""] = rest.split("=");
      args.set(k!, v);
      continue;
    }
    if (upper === "FROM") {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest)!;
      const from = m[1]!.replace(/\$\{(\w+)\}/g, (_x, k: string) => args.get(k) ?? "");
      stages.push({ name: m[2] ?? String(stages.length), from, instructions: [] });
      continue;
    }
    stages.at(-1)!.instructions.push({ op: upper, args: rest });
  }
  return stages;
}

/** Docker's .dockerignore: the last matching pattern wins; a pattern matching a parent directory matches everything below it. */
function ignored(file: string): boolean {
  const patterns = dockerignore
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  const toRegex = (p: string) =>
    new RegExp(
      `^${p
        .replace(/[.+^${}()|[\]\\]/g, "\\$&")
        .replace(/\*\*\//g, "(?:.*/)?")
        .replace(/\*\*/g, ".*")
        .replace(/(?<!\.)\*/g, "[^/]*")}$`,
    );
  const parts = file.split("/");
  const candidates = parts.map((_p, i) => parts.slice(0, i + 1).join("/"));
  let out = false;
  for (const raw of patterns) {
    const negate = raw.startsWith("!");
    const re = toRegex(negate ? raw.slice(1) : raw);
    if (candidates.some((c) => re.test(c))) out = !negate;
  }
  return out;
}

const stages = parseDockerfile(dockerfile);
const final = stages.at(-1)!;

describe("Dockerfile", () => {
  it("is a multi-stage build on a pinned Node 20 image", () => {
    expect(stages.map((s) => s.name)).toEqual(["build", "deps", "runtime"]);
    for (const s of stages) expect(s.from).toMatch(/^node:20\.\d+-bookworm-slim$/);
  });

  it("compiles in the build stage where bin/agentplane.js looks for the compiled CLI", () => {
    const build = stages.find((s) => s.name === "build")!;
    expect(build.instructions.some((i) => i.op === "RUN" && /npx tsc -p \./.test(i.args))).toBe(true);
    const tsconfig = JSON.parse(readFileSync(new URL("tsconfig.json", ROOT), "utf8")) as {
      compilerOptions: { outDir: string; rootDir: string };
    };
    expect(tsconfig.compilerOptions).toMatchObject({ outDir: "dist", rootDir: "." });
    const bin = readFileSync(new URL("bin/agentplane.js", ROOT), "utf8");
    expect(bin).toContain('"../dist/services/cli/main.js"');
    expect(final.instructions).toContainEqual({ op: "COPY", args: "--from=build /app/dist/services ./dist/services" });
    expect(final.instructions).toContainEqual({ op: "COPY", args: "--from=build /app/dist/gen ./dist/gen" });
    // The dashboard's build, where the web module looks for it (web/dist beside package.json).
    expect(build.instructions.some((i) => i.op === "RUN" && /npm run build:web/.test(i.args))).toBe(true);
    expect(final.instructions).toContainEqual({ op: "COPY", args: "--from=build /app/web/dist ./web/dist" });
    expect(final.instructions).toContainEqual({ op: "COPY", args: "bin ./bin" });
    // package.json makes dist/*.js ES modules ("type": "module").
    expect(final.instructions).toContainEqual({ op: "COPY", args: "package.json ./" });
    expect(final.instructions).toContainEqual({ op: "WORKDIR", args: "/app" });
  });

  it("ships production dependencies only and runs no package manager in the final stage", () => {
    const deps = stages.find((s) => s.name === "deps")!;
    expect(deps.instructions.some((i) => i.op === "RUN" && i.args.includes("npm ci --omit=dev"))).toBe(true);
    expect(final.instructions).toContainEqual({ op: "COPY", args: "--from=deps /app/node_modules ./node_modules" });
    expect(final.instructions.filter((i) => i.op === "RUN")).toEqual([]);
  });

  it("runs the compiled CLI as a numeric non-root user, as the Kubernetes pods expect", () => {
    const user = final.instructions.filter((i) => i.op === "USER").at(-1)?.args ?? "";
    expect(user).toMatch(/^[1-9]\d*:[1-9]\d*$/);
    const deployment = readFileSync(new URL("deploy/base/services/sessions.yaml", ROOT), "utf8");
    expect(deployment).toContain(`runAsUser: ${user.split(":")[0]}`);
    expect(final.instructions).toContainEqual({ op: "ENTRYPOINT", args: '["node", "bin/agentplane.js"]' });
    expect(final.instructions).toContainEqual({ op: "CMD", args: '["serve"]' });
  });

  it("has a build context (.dockerignore) holding what the stages copy and nothing else", () => {
    const copied = stages.flatMap((s) =>
      s.instructions
        .filter((i) => i.op === "COPY" && !i.args.startsWith("--from"))
        .flatMap((i) => i.args.split(/\s+/).slice(0, -1)),
    );
    expect([...new Set(copied)].sort()).toEqual([
      "bin",
      "clients/typescript/package.json",
      "gen",
      "package-lock.json",
      "package.json",
      "services",
      "tsconfig.json",
      "web",
    ]);
    for (const file of [
      "package.json",
      "package-lock.json",
      "tsconfig.json",
      "bin/agentplane.js",
      "gen/agentplane/sessions/v1alpha1/sessions_pb.ts",
      "services/cli/main.ts",
      "clients/typescript/package.json",
      "web/index.html",
      "web/src/main.ts",
    ]) {
      expect(ignored(file), file).toBe(false);
    }
    for (const file of [
      "node_modules/pg/package.json",
      ".data/pg/PG_VERSION",
      ".git/HEAD",
      "dist/services/cli/main.js",
      "test/deploy/envoy.test.ts",
      "services/edge/edge.test.ts",
      "deploy/envoy/api.binpb",
      "README.md",
      "web/dist/index.html",
      "clients/typescript/src/index.ts",
    ]) {
      expect(ignored(file), file).toBe(true);
    }
  });
});
