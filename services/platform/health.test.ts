import { Code, ConnectError, createHandlerContext } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { Health, HealthCheckRequestSchema, HealthCheckResponse_ServingStatus as Status } from "../../gen/grpc/health/v1/health_pb.js";
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
    const ctx = createHandlerContext({ service: Health, method: Health.method.watch, protocolName: "grpc", requestMethod: "POST", requestSignal: call.signal, url: "http://localhost/grpc.health.v1.Health/Watch" });
    const stream = createHealthService(probe, []).watch(create(HealthCheckRequestSchema, { service: "" }), ctx)[Symbol.asyncIterator]();
    const started = performance.now();
    expect((await stream.next()).value).toMatchObject({ status: Status.SERVING });
    await expect(stream.next()).rejects.toBe(deadline);
    expect(performance.now() - started).toBeLessThan(500);
  });
});
