import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { COUNTED_FROM_BYTES, defaultRequestMemoryBytes, RequestMemory } from "./request-memory.js";
import { EventEmitter } from "node:events";
import type { ServerHttp2Stream } from "node:http2";
import { getHeapStatistics } from "node:v8";

const MiB = 1 << 20;

function refusal(fn: () => unknown): ConnectError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConnectError) return e;
    throw e;
  }
  throw new Error("not refused");
}

describe("RequestMemory", () => {
  it("holds messages until released, and turns one away for now while it does not fit", () => {
    const memory = new RequestMemory(10 * MiB);
    const first = memory.hold(6 * MiB);
    const second = memory.hold(4 * MiB);
    expect(memory.inUse).toBe(10 * MiB);
    const busy = refusal(() => memory.hold(MiB));
    expect(busy.code).toBe(Code.Unavailable);
    expect(busy.metadata.get("retry-after")).toBe("1");
    first();
    first(); // a second release gives nothing back twice
    expect(memory.inUse).toBe(4 * MiB);
    memory.hold(6 * MiB);
    second();
    expect(memory.inUse).toBe(6 * MiB);
  });

  it("neither counts nor refuses messages under a megabyte", () => {
    const memory = new RequestMemory(COUNTED_FROM_BYTES);
    memory.hold(COUNTED_FROM_BYTES);
    expect(memory.inUse).toBe(COUNTED_FROM_BYTES);
    for (let i = 0; i < 1000; i++) memory.hold(COUNTED_FROM_BYTES - 1)();
    memory.hold(COUNTED_FROM_BYTES - 1);
    expect(memory.inUse).toBe(COUNTED_FROM_BYTES);
  });

  it("refuses for good a message larger than the whole bound, even with nothing held", () => {
    const memory = new RequestMemory(4 * MiB);
    const error = refusal(() => memory.hold(4 * MiB + 1));
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(error.rawMessage).toBe(
      `request: the message would take about ${4 * MiB + 1} bytes once decoded, more than this process holds ` +
        `for the requests it serves at once (${4 * MiB}, REQUEST_MEMORY_BYTES): send a smaller message`,
    );
    expect(memory.inUse).toBe(0);
    memory.hold(4 * MiB);
  });

  it("holds a stream's messages one at a time, until it closes and the calls it runs have settled", async () => {
    // A stand-in for the HTTP/2 stream: what the count uses of one is its `closed` and 'close'.
    const stream = Object.assign(new EventEmitter(), { closed: false }) as unknown as ServerHttp2Stream;
    const memory = new RequestMemory(10 * MiB);
    memory.holdUntilClosed(3 * MiB, stream);
    memory.holdUntilClosed(2 * MiB, stream); // the next message of a request stream: in place of the first
    expect(memory.inUse).toBe(2 * MiB);
    let settle!: () => void;
    memory.whileRunning(
      stream,
      new Promise<void>((resolve) => {
        settle = resolve;
      }),
    );
    Object.assign(stream, { closed: true });
    stream.emit("close");
    expect(memory.inUse).toBe(2 * MiB); // the client has gone; the implementation still runs
    settle();
    await new Promise((resolve) => setImmediate(resolve));
    expect(memory.inUse).toBe(0);
    memory.holdUntilClosed(2 * MiB, stream); // nothing left to wait for: given back at once
    expect(memory.inUse).toBe(0);
  });

  it("defaults to a quarter of V8's heap limit", () => {
    expect(defaultRequestMemoryBytes()).toBe(Math.floor(getHeapStatistics().heap_size_limit / 4));
  });
});
