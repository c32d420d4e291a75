// A bare HTTP/2 (h2c) client for hostile gRPC and Connect requests. Client libraries build
// correct frames, headers and length prefixes; the fuzzer needs to send wrong ones, so it writes
// the request itself with node:http2: any headers, the body in chunks of its choosing, a
// Content-Length that does not match. Each request has a deadline; missing it is a hang.
import {
  connect,
  constants,
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from "node:http2";

export interface H2Request {
  path: string;
  headers: OutgoingHttpHeaders;
  /** Written in order; a body of several chunks exercises reads split across DATA frames. */
  body: Uint8Array[];
  /** HTTP method; POST unless a case tries another. */
  method?: string;
  /** For a server stream: stop reading (and cancel the stream) once this holds of the body so far. */
  until?: (body: Buffer) => boolean;
  /** Send the body but never end the request: only an answer given before the body is whole comes. */
  keepOpen?: boolean;
}

export interface H2Response {
  status: number;
  headers: IncomingHttpHeaders;
  trailers: IncomingHttpHeaders;
  body: Buffer;
  ms: number;
  /** The server reset the stream (RST_STREAM) instead of answering: the code it gave. */
  resetCode?: number;
}

export class HangError extends Error {
  override name = "HangError";
}

/** Streams one connection may cancel before the client opens another. */
const RESETS_PER_CONNECTION = 500;

/** One HTTP/2 connection per server, opened again when the server closed it (GOAWAY). */
export class H2Client {
  private session: ClientHttp2Session | undefined;
  private opened = 0;
  private resets = 0;

  constructor(private readonly url: string) {}

  /** Connections opened so far (a server that closes the connection on bad input opens more). */
  get connections(): number {
    return this.opened;
  }

  private current(): ClientHttp2Session {
    if (!this.session || this.session.closed || this.session.destroyed) {
      const session = connect(this.url, { maxSessionMemory: 256, settings: { maxHeaderListSize: 1 << 20 } });
      // A connection-level error reaches every stream on it; the session itself must not throw.
      session.on("error", () => {});
      session.unref();
      this.session = session;
      this.opened++;
    }
    return this.session;
  }

  request(req: H2Request, timeoutMs: number): Promise<H2Response> {
    const started = performance.now();
    return new Promise((resolve, reject) => {
      let stream: ClientHttp2Stream;
      try {
        stream = this.current().request(
          { ":method": req.method ?? "POST", ":path": req.path, ...req.headers },
          { endStream: false },
        );
      } catch (e) {
        reject(e);
        return;
      }
      let headers: IncomingHttpHeaders = {};
      let trailers: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      let settled = false;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        // The answer is in. A stream still open on our side (the server answered before the
        // body was read, or a server stream goes on) is cancelled: flow control would hold the
        // rest forever.
        if (!stream.closed && (!stream.writableEnded || !stream.readableEnded)) this.cancel(stream);
        fn();
      };
      const answer = (resetCode?: number) =>
        finish(() =>
          resolve({
            status: Number(headers[":status"] ?? 0),
            headers,
            trailers,
            body: Buffer.concat(chunks),
            ms: performance.now() - started,
            ...(resetCode === undefined ? {} : { resetCode }),
          }),
        );
      const timer = setTimeout(() => {
        finish(() => reject(new HangError(`no answer within ${timeoutMs} ms: ${req.path}`)));
      }, timeoutMs);
      stream.on("response", (h) => (headers = h));
      stream.on("trailers", (t) => (trailers = t));
      stream.on("data", (c: Buffer) => {
        chunks.push(c);
        if (req.until?.(Buffer.concat(chunks))) answer();
      });
      stream.on("end", () => answer());
      // Closed without an end: a reset by the server is an answer of its own kind.
      stream.on("close", () =>
        answer(
          stream.rstCode !== undefined && stream.rstCode !== constants.NGHTTP2_NO_ERROR ? stream.rstCode : undefined,
        ),
      );
      stream.on("error", (e) => {
        if (stream.rstCode !== undefined && stream.rstCode !== constants.NGHTTP2_NO_ERROR) return; // reported on close
        finish(() => reject(e));
      });
      const write = async () => {
        for (const chunk of req.body) {
          if (stream.destroyed || stream.closed) return;
          if (!stream.write(chunk)) {
            await new Promise<void>((r) => {
              const done = () => {
                stream.off("drain", done);
                stream.off("close", done);
                r();
              };
              stream.on("drain", done);
              stream.on("close", done);
            });
          }
        }
        if (!req.keepOpen && !stream.destroyed && !stream.closed) stream.end();
      };
      void write();
    });
  }

  /**
   * Cancels a stream (RST_STREAM). Node's HTTP/2 server limits how many streams a client may
   * reset (the Rapid Reset mitigation, CVE-2023-44487) and then fails the connection's streams
   * with INTERNAL_ERROR, so after RESETS_PER_CONNECTION the next request opens a new connection.
   * The fuzzer sends one request at a time per client, so nothing else is on the old one.
   */
  private cancel(stream: ClientHttp2Stream): void {
    stream.close(constants.NGHTTP2_CANCEL);
    if (++this.resets >= RESETS_PER_CONNECTION) {
      this.resets = 0;
      const old = this.session;
      this.session = undefined;
      old?.close();
    }
  }

  /** Ends the connection at once (nothing is in flight when the fuzzer closes a client). */
  close(): void {
    this.session?.destroy();
    this.session = undefined;
  }
}

/** A gRPC / Connect streaming envelope: flags, 4-byte big-endian length, data. */
export function envelope(flags: number, data: Uint8Array, length = data.length): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(length, 1);
  return Buffer.concat([head, data]);
}

/** Whether `body` holds at least one complete envelope (the first message of a stream). */
export function hasEnvelope(body: Buffer): boolean {
  return body.length >= 5 && body.length >= 5 + body.readUInt32BE(1);
}
