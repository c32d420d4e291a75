// The provisioning plan of a new computer: which steps run, in which order, under which names.
// (The spec leaves transitions open; computers.proto documents the ones we chose.)
import type { ProviderType, StepKind } from "./tables.js";

export interface PlannedStep {
  position: number;
  kind: StepKind;
  name: string;
  repoUrl: string | null;
  repoDir: string | null;
}

/**
 * byom: one step, waiting for the host to register. e2b: create the sandbox, clone each repo,
 * then (autoInstallDeps) install each repo's dependencies.
 */
export function planSteps(provider: ProviderType, repos: readonly string[], autoInstallDeps: boolean): PlannedStep[] {
  if (provider === "byom")
    return [
      { position: 0, kind: "register_host", name: "Wait for the host to register", repoUrl: null, repoDir: null },
    ];
  const dirs = repoDirectories(repos);
  const steps: PlannedStep[] = [
    { position: 0, kind: "create_sandbox", name: "Create the E2B sandbox", repoUrl: null, repoDir: null },
  ];
  for (const [i, url] of repos.entries())
    steps.push({ position: steps.length, kind: "clone_repo", name: `Clone ${url}`, repoUrl: url, repoDir: dirs[i]! });
  if (autoInstallDeps) {
    for (const [i, url] of repos.entries())
      steps.push({
        position: steps.length,
        kind: "install_deps",
        name: `Install dependencies of ${dirs[i]}`,
        repoUrl: url,
        repoDir: dirs[i]!,
      });
  }
  return steps;
}

/** "https://github.com/acme/web.git" → "web". Only safe characters; never "." or "..". */
export function repoDirectoryName(url: string): string {
  let path = "";
  try {
    path = new URL(url).pathname;
  } catch {
    // validated earlier; fall through to the default
  }
  const last =
    path
      .split("/")
      .filter((s) => s !== "")
      .pop() ?? "";
  const name = decodeSafely(last)
    .replace(/\.git$/i, "")
    .replace(/[^A-Za-z0-9._-]/g, "-")
    .replace(/^[.-]+/, "");
  return name === "" ? "repo" : name.slice(0, 100);
}

/** One directory per repo; two repos with the same last segment get "-2", "-3"... */
export function repoDirectories(repos: readonly string[]): string[] {
  const used = new Set<string>();
  return repos.map((url) => {
    const base = repoDirectoryName(url);
    let dir = base;
    for (let n = 2; used.has(dir); n++) dir = `${base}-${n}`;
    used.add(dir);
    return dir;
  });
}

function decodeSafely(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
