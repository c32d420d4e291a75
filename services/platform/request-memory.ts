// A process-wide bound on the heap that request messages take while their calls run.
//
// Why: the decoded-size check (decoded-size.ts, json-objects.ts) bounds one message at
// DECODE_FACTOR times its bytes and a megabyte, about 260 MB for a 32 MiB message. That bounds
// one request, not the process: a few such calls at once (any member's API key sends
// PostMessage) pass a 512 MiB pod's memory. Each message's estimated decoded size, as that check
// computes it, is held here from its decoding to the end of its call; a message that does not fit
// beside those held is not decoded but answered UNAVAILABLE with Retry-After (503 over REST), which
// clients retry, and one larger than the whole bound RESOURCE_EXHAUSTED (429), which will not fit
// however long it waits. Messages estimated under COUNTED_FROM_BYTES, all ordinary calls, are
// neither held nor refused: a busy process still answers them.
//
// The gRPC listeners' two paths (grpc-unary.ts, connect-body-guard.ts) and the REST edge (the
// message it builds from a JSON body) hold here, one count for the process. The
// services open to anyone (health, reflection) take requests under OPEN_SERVICE_MAX_REQUEST_BYTES,
// so no caller without a credential holds any of it. OTLP exports keep their own budget
// (analytics/otlp/decode-budget.ts): their bytes are decoded on the mapping threads.
import type { ServerHttp2Stream } from "node:http2";
import { getHeapStatistics } from "node:v8";
import { Code, ConnectError } from "@connectrpc/connect";

/** Messages estimated under this (the slack decodedSizeLimit gives every message) are not counted. */
export const COUNTED_FROM_BYTES = 1 << 20;

/** Retry-After, in seconds, of a message turned away for now: calls holding memory last milliseconds to seconds. */
export const REQUEST_MEMORY_RETRY_AFTER_SECONDS = 1;

/**
 * The request message limit of the services every listener serves open, without a credential
 * (health, server reflection): their requests are a few names, and a small limit keeps anyone from
 * holding memory through them (no message of theirs reaches COUNTED_FROM_BYTES).
 */
export const OPEN_SERVICE_MAX_REQUEST_BYTES = 64 * 1024;

/** REQUEST_MEMORY_BYTES' default: a quarter of the heap V8 may grow to in this process. */
export function defaultRequestMemoryBytes(): number {
  return Math.floor(getHeapStatistics().heap_size_limit / 4);
}

/** Gives back what a hold took; calling it again does nothing. */
export type Release = () => void;

const NOTHING_HELD: Release = () => {};

/** What a stream's call holds, and what it waits for before giving it back: the close, calls running. */
interface StreamHold {
  release: Release;
  waits: number;
}

export class RequestMemory {
  private held = 0;
  private readonly streams = new WeakMap<ServerHttp2Stream, StreamHold>();

  constructor(
    /** Estimated heap bytes held at once, at most. */
    readonly limit: number,
  ) {}

  /**
   * Holds `bytes`, a message's estimated decoded size, until the release is called; throws
   * UNAVAILABLE (retry-after) when they do not fit beside those held, RESOURCE_EXHAUSTED when they
   * pass the whole limit.
   */
  hold(bytes: number): Release {
    if (bytes < COUNTED_FROM_BYTES) return NOTHING_HELD;
    if (bytes > this.limit)
      throw new ConnectError(
        `request: the message would take about ${bytes} bytes once decoded, more than this process holds ` +
          `for the requests it serves at once (${this.limit}, REQUEST_MEMORY_BYTES): send a smaller message`,
        Code.ResourceExhausted,
      );
    if (this.held + bytes > this.limit)
      throw new ConnectError(
        `request: the process holds as much of requests' messages as it takes at once (${this.limit} bytes ` +
          `decoded, REQUEST_MEMORY_BYTES); retry after ${REQUEST_MEMORY_RETRY_AFTER_SECONDS} s`,
        Code.Unavailable,
        { "retry-after": String(REQUEST_MEMORY_RETRY_AFTER_SECONDS) },
      );
    this.held += bytes;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= bytes;
    };
  }

  /**
   * Holds `bytes` (as `hold`) for the message a call on `stream` has just read, in place of any
   * it read before (a request stream's messages one at a time: the method has taken the last),
   * until the stream closes (answered, reset, gone) and every call `whileRunning` named has
   * settled. False when nothing is held (a small message, or nothing left to wait for).
   */
  holdUntilClosed(bytes: number, stream: ServerHttp2Stream): boolean {
    const existing = this.streams.get(stream);
    // Small messages on a stream holding nothing, the usual call: no bookkeeping at all.
    if (existing === undefined && bytes < COUNTED_FROM_BYTES) return false;
    const hold = existing ?? this.track(stream);
    hold.release();
    const release = this.hold(bytes);
    if (release === NOTHING_HELD) return false;
    if (hold.waits === 0) {
      // Everything it would wait for is over already.
      release();
      return false;
    }
    hold.release = release;
    return true;
  }

  /**
   * What `stream`'s call holds (holdUntilClosed said it holds something) is kept until `running`
   * settles too: its implementation may go on using the message after the client has gone.
   */
  whileRunning(stream: ServerHttp2Stream, running: Promise<unknown>): void {
    const hold = this.streams.get(stream);
    if (hold === undefined || hold.waits === 0) return;
    hold.waits++;
    const settled = () => this.settled(hold);
    running.then(settled, settled);
  }

  /** A stream's record, waiting for its close unless it has closed already. */
  private track(stream: ServerHttp2Stream): StreamHold {
    const hold: StreamHold = { release: NOTHING_HELD, waits: 0 };
    this.streams.set(stream, hold);
    if (!stream.closed) {
      hold.waits++;
      stream.once("close", () => this.settled(hold));
    }
    return hold;
  }

  private settled(hold: StreamHold): void {
    if (--hold.waits === 0) hold.release();
  }

  /** Estimated bytes held now (tests, the log). */
  get inUse(): number {
    return this.held;
  }
}
