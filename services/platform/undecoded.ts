// Methods whose request message the gRPC listener hands to the implementation undecoded: for a
// request whose decoded form can be far larger than its bytes (OTLP exports: 4 MiB of the
// smallest log records are 2 * 10^6 objects, about 480 MB), so that the implementation decides
// when and where it is decoded, within a budget of its own (services/analytics/otlp).
//
// A module names them in ServedService.undecoded. Their binary gRPC calls, compressed or not, are
// then served on the raw stream (grpc-unary.ts) whether or not GRPC_UNARY_FAST_PATH is on: the
// message's bytes, decompressed, are in the call's context under kUndecodedRequest, and the
// request message the interceptors and the implementation receive is empty. Other protocols
// (Connect, gRPC-Web, gRPC with JSON) and the in-process transport still deliver the decoded
// message, with the context value unset: an implementation handles both.
import { createContextKey } from "@connectrpc/connect";

export const kUndecodedRequest = createContextKey<Uint8Array | undefined>(undefined, {
  description: "the request message's bytes, undecoded (binary gRPC to a method named undecoded)",
});
