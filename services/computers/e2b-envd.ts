// Commands in an E2B sandbox through envd's process API (E2B spec/envd/process/process.proto):
// process.Process/Start is a server-streaming RPC spoken here in the Connect protocol with JSON
// (application/connect+json), on the shared sandbox host, routed to one sandbox by the
// E2b-Sandbox-Id / E2b-Sandbox-Port headers and authorized by the sandbox's envdAccessToken.
// A Connect stream is a sequence of envelopes: 1 flag byte, 4-byte big-endian length, payload;
// flag 0x02 marks the final end-of-stream message, which may carry an error.

/**
 * A call to E2B that failed; the message is safe to show to the computer's owner (never a key).
 * Declared here, in the lowest of the E2B files (e2b-client.ts builds on this one), so each of
 * them throws it without an import cycle.
 */
export class E2bError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "E2bError";
  }
}

export interface StartProcess {
  cmd: string;
  args: string[];
  envs: Record<string, string>;
  cwd?: string;
  /** The sandbox user to run as (Basic auth username, as E2B's SDKs send it). */
  user?: string;
}

export interface ProcessResult {
  exitCode: number;
  /** The last OUTPUT_KEEP bytes of each stream, decoded as UTF-8. */
  stdout: string;
  stderr: string;
  /** envd's own error for the process (e.g. it could not be started). */
  error: string | undefined;
}

export interface EnvdCall {
  baseUrl: string;
  sandboxId: string;
  port: number;
  accessToken: string | null;
  process: StartProcess;
  signal: AbortSignal;
  timeoutMs: number;
}

const OUTPUT_KEEP = 16 * 1024;
const FLAG_COMPRESSED = 0x01;
const FLAG_END_STREAM = 0x02;

export function envelope(payload: unknown, flags = 0): Uint8Array {
  const bytes = new TextEncoder().encode(JSON.stringify(payload));
  const out = new Uint8Array(5 + bytes.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, bytes.length);
  out.set(bytes, 5);
  return out;
}

/** Splits complete envelopes off the front of a buffer; returns them and the remainder. */
export function readEnvelopes(buffer: Uint8Array): {
  messages: { flags: number; payload: Uint8Array }[];
  rest: Uint8Array;
} {
  const messages: { flags: number; payload: Uint8Array }[] = [];
  let offset = 0;
  while (buffer.length - offset >= 5) {
    const length = new DataView(buffer.buffer, buffer.byteOffset + offset + 1, 4).getUint32(0);
    if (buffer.length - offset - 5 < length) break;
    messages.push({ flags: buffer[offset]!, payload: buffer.subarray(offset + 5, offset + 5 + length) });
    offset += 5 + length;
  }
  return { messages, rest: buffer.subarray(offset) };
}

/** Keeps the tail of a stream's output: the end of a failed command's stderr says why. */
class Tail {
  private chunks: Buffer[] = [];
  private size = 0;
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size - (this.chunks[0]?.length ?? 0) >= OUTPUT_KEEP) this.size -= this.chunks.shift()!.length;
  }
  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - OUTPUT_KEEP)).toString("utf8");
  }
}

interface ProcessEvent {
  start?: { pid?: number };
  data?: { stdout?: string; stderr?: string; pty?: string };
  end?: { exitCode?: number; exited?: boolean; status?: string; error?: string };
  keepalive?: object;
}

const CALL = "envd process.Process/Start";

export async function runEnvdProcess(call: EnvdCall): Promise<ProcessResult> {
  const headers: Record<string, string> = {
    "content-type": "application/connect+json",
    "connect-protocol-version": "1",
    "connect-timeout-ms": String(call.timeoutMs),
    "e2b-sandbox-id": call.sandboxId,
    "e2b-sandbox-port": String(call.port),
    // Ask envd for keepalive events so idle proxies do not cut a long, quiet command.
    "keepalive-ping-interval": "50",
  };
  if (call.accessToken) headers["x-access-token"] = call.accessToken;
  if (call.process.user) headers.authorization = `Basic ${Buffer.from(`${call.process.user}:`).toString("base64")}`;
  const { user: _user, ...config } = call.process;
  const timeout = AbortSignal.timeout(call.timeoutMs);
  const signal = AbortSignal.any([call.signal, timeout]);
  const timedOut = () => new E2bError(`the command did not finish within ${call.timeoutMs / 1000} s`);

  let res: Response;
  try {
    res = await fetch(`${call.baseUrl}/process.Process/Start`, {
      method: "POST",
      headers,
      body: envelope({ process: config, stdin: false }),
      signal,
    });
  } catch (err) {
    if (call.signal.aborted) throw err;
    if (timeout.aborted) throw timedOut();
    throw new E2bError(
      `E2B ${CALL} failed: ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}`,
    );
  }
  if (res.status !== 200) {
    const text = await res.text().catch(() => "");
    let message = text.trim().slice(0, 300);
    try {
      const body = JSON.parse(text) as { message?: unknown; code?: unknown };
      if (typeof body.message === "string")
        message = `${typeof body.code === "string" ? `${body.code}: ` : ""}${body.message}`;
    } catch {
      // not JSON
    }
    throw new E2bError(`E2B ${CALL} answered ${res.status}: ${message || res.statusText}`);
  }
  if (!res.body) throw new E2bError(`E2B ${CALL} answered without a body`);

  const stdout = new Tail();
  const stderr = new Tail();
  let end: ProcessEvent["end"] | undefined;
  let buffer: Uint8Array = new Uint8Array(0);
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      const joined = new Uint8Array(buffer.length + chunk.length);
      joined.set(buffer);
      joined.set(chunk, buffer.length);
      const { messages, rest } = readEnvelopes(joined);
      buffer = rest;
      for (const m of messages) {
        if (m.flags & FLAG_COMPRESSED)
          throw new E2bError(`E2B ${CALL} sent a compressed message, which was not asked for`);
        const json = JSON.parse(decoder.decode(m.payload)) as {
          event?: ProcessEvent;
          error?: { code?: string; message?: string };
        };
        if (m.flags & FLAG_END_STREAM) {
          if (json.error)
            throw new E2bError(
              `E2B ${CALL} failed: ${json.error.code ?? "unknown"}: ${json.error.message ?? "no message"}`,
            );
          continue;
        }
        const event = json.event ?? {};
        if (event.data?.stdout) stdout.push(Buffer.from(event.data.stdout, "base64"));
        if (event.data?.stderr) stderr.push(Buffer.from(event.data.stderr, "base64"));
        if (event.end) end = event.end;
      }
    }
  } catch (err) {
    if (call.signal.aborted) throw err;
    if (timeout.aborted) throw timedOut();
    if (err instanceof E2bError) throw err;
    throw new E2bError(`E2B ${CALL} stream broke: ${(err as Error).message}`);
  }
  if (!end) throw new E2bError(`E2B ${CALL} stream ended before the command did`);
  // Protobuf JSON leaves out zero values: no exitCode is exit code 0.
  return { exitCode: end.exitCode ?? 0, stdout: stdout.text(), stderr: stderr.text(), error: end.error || undefined };
}
