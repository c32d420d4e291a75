// The service is benchmarked as it is deployed: compiled JavaScript (what bin/agentplane.js runs
// when the image built dist/), not TypeScript through tsx, whose loader and transform caches add
// about 100 MB of resident memory and slow the start. The build goes to a private directory
// under node_modules/.cache, never to dist/, which bin/agentplane.js would then prefer for every
// other use of this working tree.
import { spawn } from "node:child_process";
import { access } from "node:fs/promises";
import { join } from "node:path";

export const BUILD_DIR = join("node_modules", ".cache", "agentplane-bench");

/** Compiles the project into BUILD_DIR (incrementally) and returns its absolute path. */
export async function buildService(root: string): Promise<string> {
  const outDir = join(root, BUILD_DIR);
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
  const args = [
    tsc,
    "-p",
    ".",
    "--outDir",
    outDir,
    "--sourceMap",
    "false",
    "--incremental",
    "--tsBuildInfoFile",
    join(outDir, ".tsbuildinfo"),
  ];
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let text = "";
    child.stdout.on("data", (d: Buffer) => (text += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => (text += d.toString("utf8")));
    child.once("error", reject);
    // Type errors (in work in progress elsewhere) do not stop tsc from emitting JavaScript.
    child.once("exit", () => resolve(text));
  });
  for (const file of ["services/cli/main.js", "bench/bare-server.js", "bench/timed-gets.js", "bench/stall-probe.js"]) {
    await access(join(outDir, file)).catch(() => {
      throw new Error(`the build did not produce ${file}:\n${output.slice(0, 2000)}`);
    });
  }
  return outDir;
}
