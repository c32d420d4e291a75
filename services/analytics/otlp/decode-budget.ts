// A process-wide bound on the OTLP exports being decoded and mapped at once (OTLP/HTTP bodies and
// OTLP/gRPC messages left undecoded), in bytes after decompression, shared by the mapping threads
// and the main thread (mapping-pool.ts).
//
// Why: decoded, a body takes far more memory than its bytes. Most of an ordinary export is
// attribute text, and it grows a few times; a hostile body of the smallest items grows about a
// hundredfold (4 MiB of empty log records are 2 * 10^6 objects: about 480 MB while they are
// mapped). Four such exports in flight took the service to 1.9 GB of resident memory, past the
// analytics pod's 1 GiB limit (`npm run bench:otlp-memory`). With the budget, bodies beyond it
// wait for none: the export is answered 503 with Retry-After, which OTLP exporters retry with
// backoff, as when the receiver is busy. A body alone is always taken, however large (it is
// within MAX_OTLP_BODY_BYTES), so no export is refused for good.
//
// The count lives in a SharedArrayBuffer: each thread takes and gives back its bytes with atomic
// operations, with no round trip through the main thread.
import { MAX_OTLP_BODY_BYTES } from "./wire.js";

/** At most this many bytes of bodies decoded and mapped at once: one body of the largest size. */
export const DECODE_BUDGET_BYTES = MAX_OTLP_BODY_BYTES;

export class DecodeBudget {
  private readonly taken: Int32Array;

  /** `shared`: the count's memory, the same for every thread of the process (from `shared`). */
  constructor(
    readonly shared = new SharedArrayBuffer(4),
    readonly limit = DECODE_BUDGET_BYTES,
  ) {
    this.taken = new Int32Array(shared);
  }

  /** Takes `bytes` if they fit beside those taken, or if nothing is taken; false if not. */
  take(bytes: number): boolean {
    for (;;) {
      const before = Atomics.load(this.taken, 0);
      if (before > 0 && before + bytes > this.limit) return false;
      if (Atomics.compareExchange(this.taken, 0, before, before + bytes) === before) return true;
    }
  }

  /** Gives back bytes taken. */
  give(bytes: number): void {
    Atomics.sub(this.taken, 0, bytes);
  }

  /** Bytes taken now (tests, the log). */
  get inUse(): number {
    return Atomics.load(this.taken, 0);
  }
}
