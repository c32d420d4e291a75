// Measured figures of the reliability tests: printed, and written as JSON files under
// RELIABILITY_REPORT_DIR when it is set (scripts/fuzz.ts and RELIABILITY.md use them).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export function recordFigures(name: string, figures: Record<string, unknown>): void {
  const dir = process.env.RELIABILITY_REPORT_DIR;
  if (dir) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, `${name.replace(/[^A-Za-z0-9]+/g, "_")}.json`),
      JSON.stringify({ name, ...figures }, null, 2),
    );
  }
  process.stdout.write(`[reliability] ${name}: ${JSON.stringify(figures)}\n`);
}
