// A bare HTTP/1.1 client for hostile requests. fetch() normalises what it sends (it re-encodes
// the URL and refuses some methods and bodies), so the fuzzers use node:http, which writes the
// request target as given: characters U+0080..U+00FF go out as single raw bytes, which is how a
// test sends bytes that are not UTF-8. Each request has a deadline; missing it is a hang.
import { Agent, request } from "node:http";

export interface RawRequest {
  method: string;
  /** Request target exactly as sent (path and query, already encoded the way the case wants). */
  target: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /**
   * For an answer that may never end (a 2xx event stream): stop reading once this holds of the
   * status, headers and body so far. The request is then destroyed, which closes its socket
   * (taken out of the keep-alive pool), so the server sees the client leave and ends the stream.
   */
  until?: (head: { status: number; headers: RawResponse["headers"] }, body: Buffer) => boolean;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  ms: number;
  /** The answer was cut by `until`: its end was not waited for. */
  cut?: boolean;
}

export class HangError extends Error {
  override name = "HangError";
}

const agent = new Agent({ keepAlive: true, maxSockets: 16 });

export function send(baseUrl: string, req: RawRequest, timeoutMs = 15_000): Promise<RawResponse> {
  const url = new URL(baseUrl);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const body =
      req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body, "utf8");
    const headers: Record<string, string | number> = { ...req.headers };
    if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === "content-length"))
      headers["content-length"] = body.length;
    const r = request(
      { host: url.hostname, port: url.port, method: req.method, path: req.target, headers, agent },
      (res) => {
        const chunks: Buffer[] = [];
        let settled = false;
        const answer = (cut: boolean) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString("utf8"),
            ms: performance.now() - started,
            ...(cut ? { cut } : {}),
          });
          if (cut) r.destroy();
        };
        const head = { status: res.statusCode ?? 0, headers: res.headers };
        res.on("data", (c: Buffer) => {
          chunks.push(c);
          if (req.until?.(head, Buffer.concat(chunks))) answer(true);
        });
        res.on("end", () => answer(false));
        res.on("error", (e) => {
          clearTimeout(timer);
          if (!settled) reject(e);
        });
      },
    );
    const timer = setTimeout(() => {
      r.destroy(new HangError(`no answer within ${timeoutMs} ms: ${req.method} ${req.target.slice(0, 200)}`));
    }, timeoutMs);
    r.on("error", (e) => {
      clearTimeout(timer);
      reject(e); // a no-op once answered (a cut stream's destroy)
    });
    if (body !== undefined) r.end(body);
    else r.end();
  });
}

/** Drops the pooled keep-alive sockets (between test files sharing a worker). */
export function closeAgent(): void {
  agent.destroy();
}
