// How long a gRPC listener waits for a request to arrive, and which streams a stop does not wait
// for.
//
// Connect reads a call's whole request (its one message and the end of the stream) before the
// handler runs, and nothing bounds that read: a client that sends half a message, or never ends
// the stream, holds the stream open as long as the connection lives, and a stop's drain waits for
// it until the drain timeout (DRAIN_TIMEOUT_MS, 20 s). The REST edge answers such a request 408
// at REQUEST_TIMEOUT_MS (services/edge/edge.ts); this is the listeners' equivalent:
//
// - A request not received in full within REQUEST_TIMEOUT_MS of its headers is answered
//   DEADLINE_EXCEEDED, in the protocol it speaks, "the request message was not received within
//   N ms", and its stream is closed. DEADLINE_EXCEEDED rather than CANCELLED: time ran out, as
//   when a call's own deadline passes, and nobody cancelled anything (CANCELLED tells a gRPC
//   client that the call was cancelled, normally by itself). Connect clients get it as HTTP 504.
// - At a stop, once GOAWAY went, a stream whose request has not arrived in full is reset at once
//   with REFUSED_STREAM instead of being waited for. Its handler has not run (it runs only once
//   the whole request is in), so the code's promise holds (RFC 9113 §8.7: not processed): a
//   client may retry it on another server, and gRPC clients do so by themselves. A call whose
//   request has arrived gets the drain as before.
//
// And one more kind of stream that nothing would end: when Connect stops reading a request
// before its end (a message that does not decode, a second message for a unary method), Node's
// compatibility layer pauses the stream, and request data arriving after that stays unread. Once
// the call is answered and the client ends its side, the stream is closed on the wire, but Node
// destroys an Http2Stream only when its data has been read (it waits for 'end'): the stream stays
// in its session, which then outlives even the client's leaving (the socket stays open), and a
// stop's drain waits for it until the timeout. It holds nothing but that data, so such a stream
// is destroyed, by the sweep and at a stop. This was what held the stop of
// test/reliability/fuzz-rpc.test.ts for the whole 20 s.
//
// A method that streams its requests (server reflection's bidirectional stream) is the one
// exception to the deadline: its handler runs from the first message, answers each as it comes,
// and the call lasts as long as the client keeps asking, like a server stream. A stop cuts it
// all the same (its request has not arrived in full), so it never holds the drain.
//
// It tracks HTTP/2 streams, whoever serves them: Connect over Node's compatibility layer, or the
// unary gRPC fast path on the raw stream (grpc-unary.ts); each stream comes with its own way of
// answering DEADLINE_EXCEEDED without reading the body.
//
// Cost per call: a Map entry (set as the stream opens, deleted as it closes) and one 'close'
// listener; no timer per call. One interval timer per listener (unref'd), a tenth of the timeout
// apart (at most a second), looks at the streams open longer than the timeout, oldest first, and
// stops at the first younger one: each stream is looked at about once per timeout it stays
// open, and a late request is answered within two ticks after the timeout.
import type { ServerHttp2Stream } from "node:http2";
import { constants as h2 } from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "./logger.js";

export interface RequestDeadlineOptions {
  /** REQUEST_TIMEOUT_MS: from a stream's headers to the end of its request. */
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** The paths ("/pkg.Service/Method") of the methods that stream their requests: no deadline. */
  readonly requestStreaming?: ReadonlySet<string>;
}

/**
 * Answers `error` in the request's protocol without reading its body, then closes the stream:
 * each stream's own, as whoever serves it (Connect's adapter, or the gRPC fast path) writes it.
 */
export type AnswerUnread = (error: ConnectError) => void;

/** What a stop did with the streams open at its start. */
export interface CutStreams {
  readonly open: number;
  /** Reset: their request had not arrived in full. */
  readonly cut: number;
  /** Destroyed: already closed on the wire, held only for request data nobody will read. */
  readonly released: number;
}

export interface RequestDeadline {
  /** Called as each stream opens, before anything else looks at it; `path` is its request's, for the log. */
  track(stream: ServerHttp2Stream, path: string, answer: AnswerUnread): void;
  /** At a stop, after GOAWAY: ends every stream the drain would otherwise wait for in vain. */
  cut(): CutStreams;
  /** Ends the sweep. */
  stop(): void;
}

/** Whether the client has sent its whole request: the stream's end arrived. */
function received(stream: ServerHttp2Stream): boolean {
  // The request has been read to its end (the usual case, and no native call), or the end has
  // arrived but is not read yet (the credential is checked before the body is read).
  return stream.readableEnded || stream.state.remoteClose === 1;
}

/** Closed on the wire with its answer sent, kept by Node only for unread request data. */
function leftOver(stream: ServerHttp2Stream): boolean {
  return stream.closed && !stream.destroyed && stream.writableFinished;
}

/**
 * Ends a stream whose request will not be read: answered in full, it is destroyed (after a
 * RST_STREAM NO_ERROR if still open, which tells a client still sending to stop: RFC 9113 §8.1);
 * an answer cut short is CANCEL.
 */
function release(stream: ServerHttp2Stream): void {
  if (!stream.writableFinished) return void stream.close(h2.NGHTTP2_CANCEL);
  if (!stream.closed) stream.close(h2.NGHTTP2_NO_ERROR);
  stream.destroy();
}

/** An open stream: the tick from which the sweep counts (its opening, then its last look). */
interface Tracked {
  since: number;
  readonly path: string;
  readonly answer: AnswerUnread;
  /** A method streaming its requests: the sweep does not hold it to the deadline. */
  readonly streaming: boolean;
}

export function createRequestDeadline(options: RequestDeadlineOptions): RequestDeadline {
  const tickMs = Math.min(1000, Math.max(1, Math.ceil(options.timeoutMs / 10)));
  // A stream that opened during tick k (after sweep k) has been open at least (n - k - 1) ticks
  // at sweep n: it is late when that many ticks cover the timeout.
  const lateAfterTicks = Math.ceil(options.timeoutMs / tickMs);
  let ticks = 0;
  const requestStreaming = options.requestStreaming ?? new Set<string>();
  // Every open stream; a Map keeps insertion order, so the oldest come first.
  const open = new Map<ServerHttp2Stream, Tracked>();
  function closed(this: ServerHttp2Stream) {
    open.delete(this);
  }

  const late = (stream: ServerHttp2Stream, tracked: Tracked) => {
    const error = new ConnectError(
      `the request message was not received within ${options.timeoutMs} ms`,
      Code.DeadlineExceeded,
    );
    options.logger.info(
      { rpc: tracked.path.split("?", 1)[0]!.slice(1), code: error.code, reason: error.rawMessage, phase: "request" },
      "rpc",
    );
    // Already answered from its headers (an unknown path, a content type the method does not
    // speak) while the client goes on sending: end the stream.
    if (stream.headersSent) release(stream);
    else tracked.answer(error);
  };

  const sweep = setInterval(() => {
    ticks++;
    for (const [stream, tracked] of open) {
      if (ticks - tracked.since <= lateAfterTicks) break;
      if (leftOver(stream)) {
        release(stream);
        continue;
      }
      if (!received(stream) && !tracked.streaming) late(stream, tracked);
      // Looked at: again a timeout from now, while it stays open (a stop counts it). Moved to the
      // end, behind younger streams, so this loop ends at it.
      open.delete(stream);
      tracked.since = ticks;
      open.set(stream, tracked);
    }
  }, tickMs);
  sweep.unref();

  return {
    track(stream, path, answer) {
      const streaming = requestStreaming.size > 0 && requestStreaming.has(path.split("?", 1)[0]!);
      open.set(stream, { since: ticks, path, answer, streaming });
      stream.once("close", closed);
    },
    cut() {
      const count = open.size;
      let cut = 0;
      let released = 0;
      for (const stream of open.keys()) {
        if (leftOver(stream)) {
          release(stream);
          released++;
        } else if (!received(stream)) {
          if (stream.headersSent) release(stream);
          else stream.close(h2.NGHTTP2_REFUSED_STREAM);
          cut++;
        }
      }
      return { open: count, cut, released };
    },
    stop() {
      clearInterval(sweep);
    },
  };
}
