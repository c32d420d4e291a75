// What Envoy hands the Lua error mapper on the response path, modelled from Envoy's source so the
// mapper can be tested without Envoy:
//   * grpc_json_transcoder with convert_grpc_status (JsonTranscoderFilter::maybeConvertGrpcStatus):
//     a trailers-only gRPC error becomes `:status` = grpcToHttpStatus(code), content-type
//     application/json and the google.rpc.Status printed with the configured print options
//     ({"code":N,"message":"...","details":[]}, message percent-decoded from grpc-message);
//     when the status cannot be printed (details of a type the descriptor set lacks) the headers
//     keep grpc-status and grpc-message and there is no body.
//   * a local reply (Utility::sendLocalReply) goes through local_reply_config: the mapper's
//     json_format with %LOCAL_REPLY_BODY%, %RESPONSE_CODE% (a number) and %REQ(...)%, followed by
//     the newline Envoy's JSON formatter appends.
import type { HeaderList, UpstreamResponse } from "./lua-mapper.js";

/** Envoy's Grpc::Utility::grpcToHttpStatus, transcribed from Envoy (not from services/edge). */
export const ENVOY_GRPC_TO_HTTP: Readonly<Record<number, number>> = {
  0: 200,
  1: 499,
  2: 500,
  3: 400,
  4: 504,
  5: 404,
  6: 409,
  7: 403,
  8: 429,
  9: 400,
  10: 409,
  11: 400,
  12: 501,
  13: 500,
  14: 503,
  15: 500,
  16: 401,
};

/** protobuf's JSON writer: escapes quotes, backslashes, control characters, '<' and '>'. */
export function protobufJsonString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (c < 0x20 || ch === "<" || ch === ">") out += `\\u${c.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

/** gRPC's grpc-message encoding: bytes outside printable ASCII, and '%', as %XX. */
export function grpcPercentEncode(s: string): string {
  let out = "";
  for (const b of Buffer.from(s, "utf8")) {
    out +=
      b < 0x20 || b > 0x7e || b === 0x25 ? `%${b.toString(16).toUpperCase().padStart(2, "0")}` : String.fromCharCode(b);
  }
  return out;
}

/** A service's gRPC error after the transcoder converted it (the usual case). */
export function convertedGrpcError(code: number, message: string, metadata: HeaderList = []): UpstreamResponse {
  return {
    status: ENVOY_GRPC_TO_HTTP[code] ?? 500,
    headers: [["content-type", "application/json"], ...metadata],
    body: `{"code":${code},"message":${protobufJsonString(message)},"details":[]}`,
  };
}

/** A service's gRPC error the transcoder could not print: status set, gRPC headers kept, no body. */
export function unconvertedGrpcError(code: number, message: string, metadata: HeaderList = []): UpstreamResponse {
  return {
    status: ENVOY_GRPC_TO_HTTP[code] ?? 500,
    headers: [
      ["content-type", "application/grpc"],
      ["grpc-status", String(code)],
      ["grpc-message", grpcPercentEncode(message)],
      ...metadata,
    ],
  };
}

interface LocalReplyMapper {
  filter?: { status_code_filter?: { comparison?: { op?: string; value?: { default_value?: number } } } };
  body_format_override?: { json_format?: Record<string, unknown> };
}

function substitute(
  format: unknown,
  status: number,
  text: string,
  requestHeaders: ReadonlyMap<string, string>,
): unknown {
  if (typeof format === "string") {
    if (format === "%RESPONSE_CODE%") return status; // a lone command keeps its type in json_format
    return format
      .replaceAll("%LOCAL_REPLY_BODY%", text)
      .replaceAll("%RESPONSE_CODE%", String(status))
      .replace(/%REQ\(([^)]+)\)%/g, (_m, name: string) => requestHeaders.get(name.toLowerCase()) ?? "-");
  }
  if (format !== null && typeof format === "object") {
    return Object.fromEntries(Object.entries(format).map(([k, v]) => [k, substitute(v, status, text, requestHeaders)]));
  }
  return format;
}

/** An Envoy local reply (router, transcoder) as local_reply_config of `hcm` shapes it. */
export function localReply(
  hcm: { local_reply_config?: { mappers?: LocalReplyMapper[] } },
  status: number,
  text: string,
  requestHeaders: ReadonlyMap<string, string>,
): UpstreamResponse {
  for (const m of hcm.local_reply_config?.mappers ?? []) {
    const cmp = m.filter?.status_code_filter?.comparison;
    if (cmp?.op !== "EQ" || cmp.value?.default_value !== status) continue;
    const json = m.body_format_override?.json_format;
    if (!json) continue;
    return {
      status,
      headers: [["content-type", "application/json"]],
      body: `${JSON.stringify(substitute(json, status, text, requestHeaders))}\n`,
    };
  }
  return { status, headers: [["content-type", "text/plain"]], body: text };
}
