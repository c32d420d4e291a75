// Whole RPC requests for one method: a generated message (rpc-messages.ts), sent as Connect JSON
// (`POST /<pkg.Service>/<Method>`, Content-Type application/json; a server stream uses Connect's
// streaming envelope) or as gRPC (application/grpc, length-prefixed binary frames), with a
// credential chosen for the service, and maybe damage to the framing and headers: a compressed
// flag without grpc-encoding, a length prefix larger or smaller than the data, two messages or
// none on a unary call, a wrong content type or method, a bad timeout header, huge metadata.
// Each case says what answer it forces, for the invariants (rpc-invariants.ts).
import fc from "fast-check";
import { fromBinary, fromJsonString, type DescMessage } from "@bufbuild/protobuf";
import { envelope, hasEnvelope, type H2Request } from "./raw-h2.js";
import type { Access, RpcMethod } from "./rpc-catalog.js";
import {
  binaryBody,
  jsonBody,
  jsonDamage,
  wireDamage,
  type GeneratedMessage,
  type JsonDamage,
  type MessageGenerator,
  type WireDamage,
} from "./rpc-messages.js";
import type { RpcWorld } from "./rpc-setup.js";

export type Protocol = "connect" | "grpc";

/**
 * What the answer must be. "any": any well-formed answer; "error": a well-formed error;
 * "unauthenticated": exactly UNAUTHENTICATED; "nonProtocol": the request named no protocol the
 * server speaks, so a plain HTTP status (415, 405) is right; "transport": the request broke
 * HTTP/2 rules or limits, so the server may also reset the stream (or answer, well formed).
 */
export type Expectation = "any" | "error" | "unauthenticated" | "nonProtocol" | "transport";

export interface RpcCase {
  protocol: Protocol;
  request: H2Request;
  expected: Expectation;
  /** What was done, for the failure message and the figures. */
  labels: string[];
  /**
   * The case may break the connection, not only its stream (a header block past the server's
   * limits ends the connection with GOAWAY): it goes on a connection of its own, so that the
   * next case does not meet the damage.
   */
  isolated: boolean;
}

type Credential = "valid" | "none" | "malformed" | "unknown" | "otherRole" | "huge";

function credential(access: Access, hasToken: boolean): fc.Arbitrary<Credential> {
  if (access === "open" || (access === "internal" && !hasToken)) {
    // No credential needed: one sent anyway must be ignored, whatever it is.
    return fc.oneof(
      { weight: 8, arbitrary: fc.constant<Credential>("none") },
      { weight: 1, arbitrary: fc.constantFrom<Credential>("malformed", "unknown", "huge") },
    );
  }
  return fc.oneof(
    { weight: 16, arbitrary: fc.constant<Credential>("valid") },
    { weight: 3, arbitrary: fc.constant<Credential>("otherRole") },
    { weight: 1, arbitrary: fc.constantFrom<Credential>("none", "malformed", "unknown", "huge") },
  );
}

type Framing =
  | { kind: "none" }
  | { kind: "splitChunks"; size: number }
  | { kind: "compressedNoEncoding" }
  | { kind: "badCompression"; encoding: string }
  | { kind: "prefixLarger"; extra: number }
  | { kind: "prefixSmaller" }
  | { kind: "twoMessages" }
  | { kind: "noMessage" }
  | { kind: "partialHeader" }
  | { kind: "contentType"; value: string | undefined }
  | { kind: "method"; value: string }
  | { kind: "timeout"; value: string }
  | { kind: "hugeMetadata"; bytes: number }
  | { kind: "manyHeaders"; count: number }
  | { kind: "contentLength"; delta: number };

/**
 * The deadline a server stream carries when the case sets none. A valid call may stay silent for
 * ever (WatchSessionEvents from now on sends nothing until the session changes), so the client
 * cannot wait for its end or even its headers (Connect writes them with the first message); a
 * stream with a first message is judged by it and cancelled (`until`), a silent one must be
 * ended by the server at this deadline with DEADLINE_EXCEEDED, which also shows that the server,
 * not only the client, let it go. Well under rpc-runner's CALL_TIMEOUT_MS.
 */
export const STREAM_DEADLINE_MS = 1_000;

// Timeout headers that are well formed (gRPC allows up to 8 digits; Connect's is milliseconds).
const VALID_TIMEOUTS = ["1", "0", "1m", "1n", "99999999S"];
const HUGE_METADATA = [8_000, 60_000, 200_000];
const WRONG_METHODS = ["GET", "PUT", "DELETE", "PATCH", "OPTIONS"];

function framing(protocol: Protocol, streaming: boolean): fc.Arbitrary<Framing> {
  const common: fc.WeightedArbitrary<Framing>[] = [
    { weight: 40, arbitrary: fc.constant({ kind: "none" as const }) },
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 7 }).map((size) => ({ kind: "splitChunks" as const, size })) },
    { weight: 1, arbitrary: fc.constantFrom(...WRONG_METHODS).map((value) => ({ kind: "method" as const, value })) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(...HUGE_METADATA).map((bytes) => ({ kind: "hugeMetadata" as const, bytes })),
    },
    { weight: 1, arbitrary: fc.constantFrom(100, 2_000).map((count) => ({ kind: "manyHeaders" as const, count })) },
  ];
  if (protocol === "grpc" || streaming) {
    common.push(
      { weight: 2, arbitrary: fc.constant({ kind: "compressedNoEncoding" as const }) },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom("gzip", "br", "zstd", "identity", "")
          .map((encoding) => ({ kind: "badCompression" as const, encoding })),
      },
      {
        weight: 2,
        arbitrary: fc.constantFrom(1, 10, 100_000).map((extra) => ({ kind: "prefixLarger" as const, extra })),
      },
      { weight: 1, arbitrary: fc.constant({ kind: "prefixSmaller" as const }) },
      { weight: 1, arbitrary: fc.constant({ kind: "partialHeader" as const }) },
    );
  }
  if (protocol === "grpc") {
    common.push(
      { weight: 2, arbitrary: fc.constant({ kind: "twoMessages" as const }) },
      { weight: 2, arbitrary: fc.constant({ kind: "noMessage" as const }) },
      {
        weight: 2,
        arbitrary: fc
          .constantFrom(
            undefined,
            "text/plain",
            "application/grpc+foo",
            "application/x-protobuf",
            "application/grpc-webx",
          )
          .map((value) => ({ kind: "contentType" as const, value })),
      },
      {
        weight: 2,
        arbitrary: fc
          .constantFrom("abc", "", "1", "-1S", "1000000000H", "99999999S", "1.5S", "1n", "1m")
          .map((value) => ({ kind: "timeout" as const, value })),
      },
    );
  } else {
    common.push(
      {
        weight: 2,
        arbitrary: fc
          .constantFrom(
            undefined,
            "text/plain",
            "application/jsonx",
            "application/connect+json",
            "application/x-www-form-urlencoded",
          )
          .map((value) => ({ kind: "contentType" as const, value })),
      },
      {
        weight: 2,
        arbitrary: fc
          .constantFrom("abc", "", "-1", "1.5", "99999999999", "0", "1")
          .map((value) => ({ kind: "timeout" as const, value })),
      },
    );
    if (!streaming) {
      common.push(
        {
          weight: 1,
          arbitrary: fc
            .constantFrom("gzip", "br", "identity", "")
            .map((encoding) => ({ kind: "badCompression" as const, encoding })),
        },
        {
          weight: 2,
          arbitrary: fc.constantFrom(-1, 1, 1_000).map((delta) => ({ kind: "contentLength" as const, delta })),
        },
      );
    }
  }
  return fc.oneof(...common);
}

function chunked(bytes: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

function credentialHeader(c: Credential, valid: string | undefined, other: string): string | undefined {
  switch (c) {
    case "valid":
      return valid ? `Bearer ${valid}` : undefined;
    case "otherRole":
      return `Bearer ${other}`;
    case "none":
      return undefined;
    case "malformed":
      return "Basic dXNlcjpwYXNz";
    case "unknown":
      return `Bearer apk_${"Q".repeat(43)}`;
    case "huge":
      return `Bearer ${"k".repeat(8_000)}`;
  }
}

/**
 * Whether the server can decode the message (with the same library it uses, and Connect's
 * default of ignoring unknown JSON fields): decoding comes before the credential is looked at.
 */
function decodes(input: DescMessage, protocol: Protocol, payload: Uint8Array): boolean {
  try {
    if (protocol === "grpc") fromBinary(input, payload);
    else
      fromJsonString(input, new TextDecoder("utf-8", { fatal: true }).decode(payload), { ignoreUnknownFields: true });
    return true;
  } catch {
    return false;
  }
}

export interface CaseContext {
  world: RpcWorld;
  generator: MessageGenerator;
  /** Overwrites correlated fields (a session and its lease token) when both were chosen valid. */
  coherent?: fc.Arbitrary<Record<string, unknown>>;
}

export function rpcCases(m: RpcMethod, ctx: CaseContext): fc.Arbitrary<RpcCase> {
  const streaming = m.method.methodKind === "server_streaming";
  const input: DescMessage = m.method.input;
  const token =
    m.access === "public"
      ? ctx.world.org.members.owner.key
      : m.access === "internal"
        ? ctx.world.workloadTokens[m.service.typeName]
        : undefined;
  const others = [ctx.world.org.members.manager.key, ctx.world.org.members.member.key, ctx.world.org.members.guest.key];
  const path = `/${m.service.typeName}/${m.method.name}`;
  const protocolCase = (protocol: Protocol) =>
    fc
      .record({
        message: ctx.generator.message(input),
        coherent: ctx.coherent ?? fc.constant(undefined),
        damage: protocol === "connect" ? jsonDamage(input) : wireDamage(input),
        framing: framing(protocol, streaming),
        credential: credential(m.access, token !== undefined),
        other: fc.constantFrom(...others),
      })
      .map((r) => build(protocol, r as Parts));

  type Parts = {
    message: GeneratedMessage;
    coherent: Record<string, unknown> | undefined;
    damage: JsonDamage | WireDamage;
    framing: Framing;
    credential: Credential;
    other: string;
  };

  function build(protocol: Protocol, r: Parts): RpcCase {
    const json = { ...r.message.json };
    const labels = [
      `protocol:${protocol}`,
      `credential:${r.credential}`,
      `damage:${r.damage.kind}`,
      `framing:${r.framing.kind}`,
    ];
    if (r.coherent) {
      const keys = Object.keys(r.coherent);
      if (keys.length > 0 && keys.every((k) => r.message.labels.includes(`${k}:valid`))) {
        Object.assign(json, r.coherent);
        labels.push("coherent");
      }
    }
    labels.push(...r.message.labels);

    const f = r.framing;
    const headers: Record<string, string | string[]> = {};
    const auth = credentialHeader(r.credential, token, r.other);
    if (auth) headers.authorization = auth;

    let body: Buffer[];
    const payload =
      protocol === "grpc"
        ? Buffer.from(binaryBody(input, json, r.damage as WireDamage))
        : jsonBody(input, json, r.damage as JsonDamage);
    if (protocol === "grpc") {
      headers["content-type"] = "application/grpc";
      headers.te = "trailers";
      body = [envelope(0, payload)];
      switch (f.kind) {
        case "compressedNoEncoding":
          body = [envelope(1, payload)];
          break;
        case "badCompression":
          headers["grpc-encoding"] = f.encoding;
          body = [envelope(1, payload)];
          break;
        case "prefixLarger":
          body = [envelope(0, payload, payload.length + f.extra)];
          break;
        case "prefixSmaller":
          // The announced length ends a byte early: the last byte and a 0 start a second, partial frame.
          body = [envelope(0, payload, Math.max(0, payload.length - 1)), Buffer.from([0x00])];
          break;
        case "twoMessages":
          body = [envelope(0, payload), envelope(0, payload)];
          break;
        case "noMessage":
          body = [];
          break;
        case "partialHeader":
          body = [Buffer.from([0, 0, 0])];
          break;
        case "contentType":
          if (f.value === undefined) delete headers["content-type"];
          else headers["content-type"] = f.value;
          break;
        case "timeout":
          headers["grpc-timeout"] = f.value;
          break;
      }
    } else if (streaming) {
      // Connect's streaming protocol: the request message in one envelope.
      headers["content-type"] = "application/connect+json";
      headers["connect-protocol-version"] = "1";
      body = [envelope(0, payload)];
      switch (f.kind) {
        case "compressedNoEncoding":
          body = [envelope(1, payload)];
          break;
        case "badCompression":
          headers["connect-content-encoding"] = f.encoding;
          body = [envelope(1, payload)];
          break;
        case "prefixLarger":
          body = [envelope(0, payload, payload.length + f.extra)];
          break;
        case "prefixSmaller":
          body = [envelope(0, payload, Math.max(0, payload.length - 1)), Buffer.from([0x00])];
          break;
        case "partialHeader":
          body = [Buffer.from([0, 0, 0])];
          break;
        case "contentType":
          if (f.value === undefined) delete headers["content-type"];
          else headers["content-type"] = f.value === "application/connect+json" ? "application/json" : f.value;
          break;
        case "timeout":
          headers["connect-timeout-ms"] = f.value;
          break;
      }
    } else {
      headers["content-type"] = "application/json";
      headers["connect-protocol-version"] = "1";
      body = [payload];
      switch (f.kind) {
        case "badCompression":
          headers["content-encoding"] = f.encoding;
          break;
        case "contentType":
          if (f.value === undefined) delete headers["content-type"];
          else headers["content-type"] = f.value;
          break;
        case "timeout":
          headers["connect-timeout-ms"] = f.value;
          break;
        case "contentLength":
          headers["content-length"] = String(Math.max(0, payload.length + f.delta));
          break;
      }
    }
    if (f.kind === "splitChunks") body = chunked(Buffer.concat(body), f.size);
    if (f.kind === "hugeMetadata") headers["x-fuzz-pad"] = "p".repeat(f.bytes);
    if (f.kind === "manyHeaders") for (let i = 0; i < f.count; i++) headers[`x-fuzz-${i}`] = String(i);

    const badCredential = token !== undefined && ["none", "malformed", "unknown", "huge"].includes(r.credential);
    const expected = expectationOf(f, {
      protocol,
      streaming,
      badCredential,
      emptyBody: payload.length === 0,
      decodes: () => decodes(input, protocol, payload),
    });
    const request: H2Request = { path, headers, body, ...(f.kind === "method" ? { method: f.value } : {}) };
    // A server stream is judged by its first message (or its end): it never ends by itself. One
    // that may open gets a deadline unless the case gives its own: "any", and "transport" (huge
    // or many headers, which a server may accept and then open the stream); those that are
    // refused keep their exact answer (a deadline cannot race the error).
    if (streaming) request.until = hasEnvelope;
    if (streaming && (expected === "any" || expected === "transport") && f.kind !== "timeout") {
      if (protocol === "grpc") headers["grpc-timeout"] = `${STREAM_DEADLINE_MS}m`;
      else headers["connect-timeout-ms"] = String(STREAM_DEADLINE_MS);
    }
    return { protocol, request, expected, labels, isolated: expected === "transport" };
  }

  return fc.oneof(protocolCase("connect"), protocolCase("grpc"));
}

/**
 * The answer a case forces. Framing and encoding damage is found before the credential is looked
 * at (the body is read first), so a bad credential forces exactly UNAUTHENTICATED only on a
 * request that is otherwise sound and decodes.
 */
function expectationOf(
  f: Framing,
  c: { protocol: Protocol; streaming: boolean; badCredential: boolean; emptyBody: boolean; decodes: () => boolean },
): Expectation {
  switch (f.kind) {
    case "contentType":
    case "method":
      return "nonProtocol";
    case "hugeMetadata":
    case "manyHeaders":
    case "contentLength":
      return "transport";
    case "timeout":
      return VALID_TIMEOUTS.includes(f.value) ? "any" : "error";
    case "badCompression": {
      // gzip and br are accepted; "identity" and "" name no compression. In an envelope the
      // compressed flag is set: an error unless the encoding is real (then an empty message
      // decompresses to an empty one). A unary body that is not gzip or br is an error unless
      // it is empty.
      const real = f.encoding === "gzip" || f.encoding === "br";
      if (c.protocol === "connect" && !c.streaming) return real && !c.emptyBody ? "error" : "any";
      return real ? "any" : "error";
    }
    case "compressedNoEncoding":
    case "prefixLarger":
    case "prefixSmaller":
    case "twoMessages":
    case "noMessage":
    case "partialHeader":
      return "error";
    case "none":
    case "splitChunks":
      return c.badCredential ? (c.decodes() ? "unauthenticated" : "error") : "any";
  }
}
