// How every command answers: human text by default, one JSON object on stdout with --json, and
// a one-line reason on stderr with a non-zero exit on failure.
export class UsageError extends Error {}

export interface Output {
  readonly json: boolean;
  /** Prints the result: the object as JSON with --json, else the text. */
  result(value: Record<string, unknown>, text: string): void;
}

export function createOutput(json: boolean): Output {
  return {
    json,
    result(value, text) {
      process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
    },
  };
}

export function fail(err: unknown, json: boolean): never {
  const message = (err instanceof Error ? err.message : String(err)).split("\n")[0] ?? "failed";
  if (json) process.stdout.write(`${JSON.stringify({ error: message })}\n`);
  process.stderr.write(`agentplane: ${message}\n`);
  process.exit(err instanceof UsageError ? 2 : 1);
}
