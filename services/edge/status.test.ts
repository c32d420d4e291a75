// The gRPC code → HTTP status table and the reason phrases of the error body's title.
import { STATUS_CODES } from "node:http";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ENVOY_GRPC_TO_HTTP } from "../../test/deploy/envoy-model.js";
import { GRPC_TO_HTTP_STATUS, httpStatusFromCode, reasonPhrase } from "./status.js";

describe("status table", () => {
  it("maps every gRPC code as Envoy does", () => {
    // The expectation is Envoy's grpcToHttpStatus as transcribed from Envoy's source, not a copy of
    // the table under test.
    expect(GRPC_TO_HTTP_STATUS).toEqual(ENVOY_GRPC_TO_HTTP);
    // Every code connect knows has its own entry: none reaches the default by being left out.
    const codes = Object.values(Code).filter((c): c is Code => typeof c === "number");
    expect(codes).toHaveLength(16);
    for (const code of [0, ...codes]) {
      expect(Object.hasOwn(GRPC_TO_HTTP_STATUS, code), Code[code] ?? "OK").toBe(true);
      expect(httpStatusFromCode(code)).toBe(ENVOY_GRPC_TO_HTTP[code]);
    }
    expect(httpStatusFromCode(42)).toBe(500);
  });

  it("titles statuses with their reason phrase", () => {
    expect(reasonPhrase(404)).toBe(STATUS_CODES[404]);
    expect(reasonPhrase(499)).toBe("Client Closed Request");
  });
});
