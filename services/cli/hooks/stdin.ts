// Reading the hook's standard input: all of it, but never past the deadline or a size cap (an
// agent that forgets to close the pipe, or pipes something huge, must not hold the hook).
import type { Readable } from "node:stream";

export type StdinResult = { ok: true; text: string } | { ok: false; reason: string };

export function readInput(
  stream: Readable & { isTTY?: boolean },
  deadlineAt: number,
  maxBytes: number,
): Promise<StdinResult> {
  // Run by hand in a terminal there is no event to read; waiting for one would hang.
  if (stream.isTTY) return Promise.resolve({ ok: true, text: "" });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (result: StdinResult) => {
      clearTimeout(timer);
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("error", onError);
      stream.pause();
      resolve(result);
    };
    const onData = (chunk: Buffer | string) => {
      const buffer = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      size += buffer.length;
      if (size > maxBytes) return done({ ok: false, reason: `input larger than ${maxBytes} bytes` });
      chunks.push(buffer);
    };
    const onEnd = () => done({ ok: true, text: Buffer.concat(chunks).toString("utf8") });
    const onError = (err: Error) => done({ ok: false, reason: `cannot read stdin: ${err.message}` });
    const timer = setTimeout(
      () => done({ ok: false, reason: "stdin was not closed before the deadline" }),
      Math.max(0, deadlineAt - Date.now()),
    );
    stream.on("data", onData);
    stream.on("end", onEnd);
    stream.on("error", onError);
  });
}
