// What every answer of the gRPC port must be, whatever was sent (issue 17): a well-formed gRPC
// answer (HTTP 200, a grpc-status 0..16 in the trailers, exactly one decodable message on OK)
// or Connect answer (a decodable JSON message, or an error body {code, message} whose HTTP
// status is the code's), never INTERNAL or UNKNOWN, never a stack frame or a source path in a
// message, and for INVALID_ARGUMENT a message that says what is wrong. A request that names no
// protocol the server speaks gets a plain HTTP status; one that breaks HTTP/2 limits may be reset.
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { fromBinary, fromJson, type DescMessage, type DescMethod, type JsonValue } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { codeFromString, codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import { leakIn } from "./invariants.js";
import type { H2Response } from "./raw-h2.js";
import type { Expectation, RpcCase } from "./rpc-cases.js";

export type Answer =
  | { kind: "rpc"; code: Code | 0; message: string }
  | { kind: "http"; status: number }
  | { kind: "reset"; code: number };

/** A name for the figures: "OK", "INVALID_ARGUMENT", "HTTP 415", "RST_STREAM 1". */
export function answerLabel(a: Answer): string {
  if (a.kind === "http") return `HTTP ${a.status}`;
  if (a.kind === "reset") return `RST_STREAM ${a.code}`;
  return a.code === 0 ? "OK" : codeName(a.code);
}

export function codeName(code: Code): string {
  return (Code[code] ?? String(code)).replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

/** Decompresses a compressed envelope or body by the encoding the answer names. */
function inflate(data: Buffer, encoding: string | undefined, problems: string[]): Buffer {
  try {
    if (encoding === "gzip") return gunzipSync(data);
    if (encoding === "br") return brotliDecompressSync(data);
    problems.push(`compressed with ${JSON.stringify(encoding)}`);
  } catch (e) {
    problems.push(`does not decompress as ${encoding}: ${(e as Error).message}`);
  }
  return data;
}

/** The envelopes of a gRPC or Connect streaming body; problems when it does not split into whole ones. */
function envelopes(body: Buffer, problems: string[], encoding?: string): { flags: number; data: Buffer }[] {
  const out: { flags: number; data: Buffer }[] = [];
  let at = 0;
  while (at < body.length) {
    if (body.length - at < 5) {
      problems.push(`a partial envelope header of ${body.length - at} bytes`);
      break;
    }
    const length = body.readUInt32BE(at + 1);
    if (at + 5 + length > body.length) {
      problems.push(`an envelope announcing ${length} bytes with ${body.length - at - 5} present`);
      break;
    }
    const flags = body[at]!;
    const data = body.subarray(at + 5, at + 5 + length);
    // Flag 1: compressed with the encoding the answer's headers name.
    out.push(flags & 1 ? { flags: flags & ~1, data: inflate(data, encoding, problems) } : { flags, data });
    at += 5 + length;
  }
  return out;
}

const header = (h: Record<string, unknown>, name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? String(v[0]) : v === undefined ? undefined : String(v);
};

function decodeGrpcMessage(raw: string, problems: string[]): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    problems.push(`grpc-message is not percent-encoded UTF-8: ${raw.slice(0, 120)}`);
    return raw;
  }
}

function parses(what: () => unknown, problems: string[], name: string): void {
  try {
    what();
  } catch (e) {
    problems.push(`the ${name} does not decode: ${(e as Error).message.slice(0, 200)}`);
  }
}

/** Reads an answer into its kind, collecting what is malformed about it. */
export function readAnswer(res: H2Response, method: DescMethod, problems: string[]): Answer {
  if (res.resetCode !== undefined) return { kind: "reset", code: res.resetCode };
  const contentType = header(res.headers, "content-type") ?? "";
  const output: DescMessage = method.output;
  const streaming = method.methodKind === "server_streaming";
  if (/^application\/grpc(?:\+proto)?$/.test(contentType)) {
    if (res.status !== 200) problems.push(`gRPC answer with HTTP status ${res.status}`);
    // Trailers, or the headers of a trailers-only answer.
    const statusText = header(res.trailers, "grpc-status") ?? header(res.headers, "grpc-status");
    if (statusText === undefined) {
      // A stream cancelled after its first message has no trailers yet.
      if (streaming && res.body.length > 0) {
        for (const e of envelopes(res.body, problems, header(res.headers, "grpc-encoding")))
          parses(() => fromBinary(output, e.data), problems, "streamed message");
        return { kind: "rpc", code: 0, message: "" };
      }
      problems.push("gRPC answer without grpc-status");
      return { kind: "rpc", code: Code.Unknown, message: "" };
    }
    if (!/^(?:[0-9]|1[0-6])$/.test(statusText)) problems.push(`grpc-status ${JSON.stringify(statusText)}`);
    const code = Number(statusText) as Code | 0;
    const message = decodeGrpcMessage(
      header(res.trailers, "grpc-message") ?? header(res.headers, "grpc-message") ?? "",
      problems,
    );
    const messages = envelopes(res.body, problems, header(res.headers, "grpc-encoding"));
    if (code === 0) {
      if (!streaming && messages.length !== 1) problems.push(`OK with ${messages.length} messages`);
      if (streaming && messages.length === 0) problems.push("a stream that ended OK without a message");
      for (const e of messages) {
        if (e.flags !== 0) problems.push(`message flags ${e.flags}`);
        parses(() => fromBinary(output, e.data), problems, "answer message");
      }
    } else if (messages.length > 0 && !streaming) problems.push(`an error with ${messages.length} messages`);
    return { kind: "rpc", code, message };
  }
  if (contentType.startsWith("application/json")) {
    const encoding = header(res.headers, "content-encoding");
    const text = (encoding && encoding !== "identity" ? inflate(res.body, encoding, problems) : res.body).toString(
      "utf8",
    );
    if (res.status === 200) {
      parses(() => fromJson(output, JSON.parse(text) as JsonValue), problems, "answer JSON");
      return { kind: "rpc", code: 0, message: "" };
    }
    return connectError(text, res.status, problems);
  }
  if (contentType.startsWith("application/connect+json")) {
    if (res.status !== 200) problems.push(`Connect stream with HTTP status ${res.status}`);
    const [first] = envelopes(res.body, problems, header(res.headers, "connect-content-encoding"));
    if (!first) {
      problems.push("a Connect stream without an envelope");
      return { kind: "rpc", code: Code.Unknown, message: "" };
    }
    if (first.flags === 0) {
      parses(
        () => fromJson(output, JSON.parse(first.data.toString("utf8")) as JsonValue),
        problems,
        "streamed JSON message",
      );
      return { kind: "rpc", code: 0, message: "" };
    }
    if (first.flags !== 2) problems.push(`envelope flags ${first.flags}`);
    let end: any;
    try {
      end = JSON.parse(first.data.toString("utf8"));
    } catch {
      problems.push("the end-of-stream envelope is not JSON");
      return { kind: "rpc", code: Code.Unknown, message: "" };
    }
    if (!end?.error) {
      problems.push("a stream that ended without a message or an error");
      return { kind: "rpc", code: 0, message: "" };
    }
    return connectError(JSON.stringify(end.error), undefined, problems);
  }
  return { kind: "http", status: res.status };
}

function connectError(text: string, status: number | undefined, problems: string[]): Answer {
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    problems.push(`Connect error body is not JSON: ${text.slice(0, 120)}`);
    return { kind: "rpc", code: Code.Unknown, message: "" };
  }
  const code = typeof json?.code === "string" ? codeFromString(json.code) : undefined;
  if (code === undefined) {
    problems.push(`Connect error code ${JSON.stringify(json?.code)}`);
    return { kind: "rpc", code: Code.Unknown, message: "" };
  }
  if (status !== undefined && codeToHttpStatus(code) !== status)
    problems.push(`Connect code ${json.code} with HTTP status ${status}`);
  const message = typeof json.message === "string" ? json.message : "";
  return { kind: "rpc", code, message };
}

/** The problems with an answer to a case (empty when it is fine). */
export function problemsWith(c: RpcCase, res: H2Response, method: DescMethod): { answer: Answer; problems: string[] } {
  const problems: string[] = [];
  const answer = readAnswer(res, method, problems);
  for (const text of [
    res.body.toString("utf8"),
    header(res.trailers, "grpc-message") ?? "",
    answer.kind === "rpc" ? answer.message : "",
  ]) {
    const leak = leakIn(text);
    if (leak) problems.push(`the answer leaks internals: ${JSON.stringify(leak)}`);
  }
  if (answer.kind === "rpc" && answer.code !== 0) {
    if (answer.code === Code.Internal || answer.code === Code.Unknown)
      problems.push(`${codeName(answer.code)}: ${answer.message}`);
    if (answer.message.trim() === "") problems.push(`${codeName(answer.code)} without a message`);
    if (answer.code === Code.InvalidArgument) {
      const vague = vagueness(answer.message, method.input);
      if (vague) problems.push(`INVALID_ARGUMENT message ${JSON.stringify(answer.message.slice(0, 200))} ${vague}`);
    }
  }
  problems.push(...unmet(c.expected, answer));
  return { answer, problems };
}

function unmet(expected: Expectation, a: Answer): string[] {
  switch (expected) {
    case "any":
      return a.kind === "rpc" ? [] : [`expected an RPC answer, got ${answerLabel(a)}`];
    case "error":
      return a.kind === "rpc" && a.code !== 0 ? [] : [`expected an error, got ${answerLabel(a)}`];
    case "unauthenticated":
      return a.kind === "rpc" && a.code === Code.Unauthenticated
        ? []
        : [`expected UNAUTHENTICATED, got ${answerLabel(a)}`];
    case "nonProtocol":
      return a.kind === "http" && [405, 415].includes(a.status)
        ? []
        : a.kind === "rpc" && a.code !== 0
          ? []
          : [`expected HTTP 405/415 or an error, got ${answerLabel(a)}`];
    case "transport":
      return a.kind === "http" && a.status !== 431
        ? [`expected an RPC answer, a reset or 431, got ${answerLabel(a)}`]
        : [];
  }
}

// Messages of the protocol layer (Connect's framing, decoding and limits), which say what is
// wrong with the request as a whole rather than with one field.
const PROTOCOL_MESSAGES = [
  /^protocol error: /,
  /^cannot decode /,
  /^parse binary: /,
  /^received compressed envelope/,
  /^decompression failed$/,
  /^timeout \d+ms must be <= \d+$/,
];

/**
 * Why an INVALID_ARGUMENT message fails to say what is wrong, or undefined: it must be one of the
 * protocol layer's own messages, or start with the path of the field it is about
 * ("sessionSettings.tags[0].name: …", "report.lint.denominator: …"), whose first name is a field
 * of the request message or of a message inside it (SubmitReport names fields inside the report,
 * as readiness.proto documents), or "request" for the request as a whole.
 */
export function vagueness(message: string, input: DescMessage): string | undefined {
  if (PROTOCOL_MESSAGES.some((re) => re.test(message))) return undefined;
  const m = /^([A-Za-z_]\w*)(?:[.[ ][^:]*)?: \S/su.exec(message) ?? /^([A-Za-z_]\w*)[.[]/.exec(message);
  if (!m || !message.includes(": ")) return "does not start with the field it is about";
  const head = m[1]!;
  if (head === "request") return undefined;
  return fieldNames(input).has(head) ? undefined : `names "${head}", not a field of ${input.typeName}`;
}

const names = new Map<string, Set<string>>();

/** JSON, proto and local names of every field of the message and of the messages inside it. */
function fieldNames(input: DescMessage): Set<string> {
  let known = names.get(input.typeName);
  if (known) return known;
  known = new Set();
  const visit = (m: DescMessage, seen: Set<string>) => {
    if (seen.has(m.typeName)) return;
    seen.add(m.typeName);
    for (const f of m.fields) {
      known!.add(f.jsonName).add(f.name).add(f.localName);
      const inner =
        f.fieldKind === "message"
          ? f.message
          : (f.fieldKind === "list" || f.fieldKind === "map") && f.message
            ? f.message
            : undefined;
      if (inner) visit(inner, seen);
    }
  };
  visit(input, new Set());
  names.set(input.typeName, known);
  return known;
}
