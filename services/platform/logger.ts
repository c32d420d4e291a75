import { pino, type Logger } from "pino";

export type { Logger };

// Secrets never reach the logs: any field that could carry a credential is redacted wherever
// it appears in a log object.
const REDACT = [
  "authorization",
  "*.authorization",
  "headers.authorization",
  "req.headers.authorization",
  "apiKey",
  "*.apiKey",
  "token",
  "*.token",
  "password",
  "*.password",
  "jwt",
  "*.jwt",
];

// Fields can be redacted by name, but a credential also reaches the logs inside text: a client
// that put its key in a query value, a path variable or a body field gets it echoed in the
// reason of the refusal (`repoId: no repository with ID apk_…`), which the rpc line logs. So
// every line is also scrubbed, as written, of anything shaped like a credential, whatever field
// or message holds it: API keys (apk_) and workload tokens (aps_), JWTs (three base64url parts,
// the first a JSON object, so "eyJ"), and whatever follows "Bearer". Their characters are never
// escaped in JSON, so the serialized line shows them as the client sent them. Envoy's access log
// gets the same from redact_credentials in deploy/envoy/error-mapper.lua.
const CREDENTIAL =
  /(?:[Bb]earer|BEARER)\s+[^\s"\\]+|(ap[ks])_[A-Za-z0-9_-]{6,}|eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]*)?/g;

/** `text` with every credential-shaped substring replaced (the prefix of a key kept, for diagnosis). */
export function redactCredentials(text: string): string {
  return text.replace(CREDENTIAL, (match: string, keyPrefix: string | undefined) =>
    keyPrefix !== undefined
      ? `${keyPrefix}_[redacted]`
      : match.startsWith("eyJ")
        ? "[redacted JWT]"
        : "Bearer [redacted]",
  );
}

/** Characters collected before a buffered logger writes; a quiet server's lines wait at most FLUSH_AFTER_MS. */
const BUFFER_CHARS = 4096;
const FLUSH_AFTER_MS = 200;

/**
 * Collects lines and hands them to an asynchronous destination BUFFER_CHARS at a time, or
 * FLUSH_AFTER_MS after the oldest waiting line: under load one write per dozen lines, done off
 * the event loop. Whatever is left is written synchronously when the process exits.
 */
function bufferedDestination(fd: number): { write(line: string): boolean } {
  const sonic = pino.destination({ fd, sync: false });
  let pending = "";
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (pending === "") return;
    sonic.write(pending);
    pending = "";
  };
  process.on("exit", () => {
    flush();
    try {
      sonic.flushSync();
    } catch {
      // Nothing more can be done while exiting.
    }
  });
  return {
    write(line: string) {
      pending += line;
      if (pending.length >= BUFFER_CHARS) flush();
      else timer ??= setTimeout(flush, FLUSH_AFTER_MS).unref();
      return true;
    },
  };
}

/**
 * A JSON-lines logger; `toStderr` keeps stdout free for a command's answer.
 *
 * `buffered` (the server): lines are written in batches, asynchronously (bufferedDestination).
 * A synchronous write per request was about a tenth of the server's CPU under load
 * (BENCHMARKS.md).
 */
export function createLogger(level: string, toStderr = false, buffered = false): Logger {
  const fd = toStderr ? 2 : 1;
  const destination = buffered ? bufferedDestination(fd) : toStderr ? pino.destination({ fd, sync: true }) : undefined;
  return pino(
    {
      level,
      base: { service: "agentplane" },
      redact: { paths: REDACT, censor: "[redacted]" },
      hooks: { streamWrite: redactCredentials },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
