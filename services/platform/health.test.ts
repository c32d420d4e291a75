import { Code, ConnectError, createHandlerContext } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponse_ServingStatus as Status,
} from "../../gen/grpc/health/v1/health_pb.js";
import { createHealthService } from "./health.js";

describe("Health.Watch", () => {
  it("ends at once when the call is aborted while a status is read, with the abort's reason", async () => {
    const call = new AbortController();
    const deadline = new ConnectError("the operation timed out", Code.DeadlineExceeded);
    // The deadline passes while the first status is being read: the listener added after it
    // would never fire, and the watch waited for its next poll (2 s).
    const probe = async () => {
      call.abort(deadline);
      return true;
    };
    const ctx = createHandlerContext({
      service: Health,
      method: Health.method.watch,
      protocolName: "grpc",
      requestMethod: "POST",
      requestSignal: call.signal,
      url: "http://localhost/grpc.health.v1.Health/Watch",
    });
    const stream = createHealthService(probe, [])
      .watch(create(HealthCheckRequestSchema, { service: "" }), ctx)
      [Symbol.asyncIterator]();
    const started = performance.now();
    expect((await stream.next()).value).toMatchObject({ status: Status.SERVING });
    await expect(stream.next()).rejects.toBe(deadline);
    expect(performance.now() - started).toBeLessThan(500);
  });

  it("sends NOT_SERVING and ends when the server begins to stop, so an open watch does not hold the drain", async () => {
    const call = new AbortController();
    const draining = new AbortController();
    const ctx = createHandlerContext({
      service: Health,
      method: Health.method.watch,
      protocolName: "grpc",
      requestMethod: "POST",
      requestSignal: call.signal,
      url: "http://localhost/grpc.health.v1.Health/Watch",
    });
    const health = createHealthService(async () => true, [], draining.signal);
    const stream = health.watch(create(HealthCheckRequestSchema, { service: "" }), ctx)[Symbol.asyncIterator]();
    expect((await stream.next()).value).toMatchObject({ status: Status.SERVING });
    const next = stream.next();
    const started = performance.now();
    draining.abort();
    expect((await next).value).toMatchObject({ status: Status.NOT_SERVING });
    expect(await stream.next()).toEqual({ done: true, value: undefined });
    expect(performance.now() - started).toBeLessThan(500);
    // Check answers NOT_SERVING too: probes take the pod out of rotation.
    expect(await health.check(create(HealthCheckRequestSchema, { service: "" }), ctx)).toMatchObject({
      status: Status.NOT_SERVING,
    });
  });
});
