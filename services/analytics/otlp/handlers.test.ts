// The bound on exports in flight: past it an export is UNAVAILABLE with Retry-After (503 over
// OTLP/HTTP), which OTLP exporters retry with backoff, before anything is decoded or read.
import { create } from "@bufbuild/protobuf";
import { createContextValues, type HandlerContext } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { HttpBodySchema } from "../../../gen/google/api/httpbody_pb.js";
import { DomainError } from "../../platform/errors.js";
import { createOtlpServices } from "./handlers.js";
import { RETRY_AFTER_SECONDS } from "./mapping-job.js";

const ctx = () => ({ values: createContextValues(), responseHeader: new Headers() }) as unknown as HandlerContext;

async function refusal(run: () => Promise<unknown>): Promise<DomainError> {
  try {
    await run();
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    return e as DomainError;
  }
  throw new Error("not refused");
}

describe("the OTLP receiver when busy", () => {
  // No export may run: every one finds the bound reached (the database is never touched).
  const services = createOtlpServices({ db: {} as never, maxConcurrent: 0 });

  it("answers OTLP/gRPC exports UNAVAILABLE with retry-after", async () => {
    const e = await refusal(async () => services.metrics.export!({} as never, ctx()));
    expect(e.kind).toBe("unavailable");
    expect(e.headers).toEqual({ "retry-after": String(RETRY_AFTER_SECONDS) });
  });

  it("answers OTLP/HTTP exports the same (503 with Retry-After through either edge)", async () => {
    const body = create(HttpBodySchema, { contentType: "application/json", data: new TextEncoder().encode("{}") });
    const e = await refusal(async () => {
      for await (const _ of services.http.exportLogs!(body, ctx()) as AsyncIterable<unknown>) {
        // a refusal comes before the first message
      }
    });
    expect(e.kind).toBe("unavailable");
    expect(e.headers?.["retry-after"]).toBe(String(RETRY_AFTER_SECONDS));
  });
});
