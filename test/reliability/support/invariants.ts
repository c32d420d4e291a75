// What every answer of the public API must be, whatever was asked (issue 10): a 2xx with the
// endpoint's JSON shape, or a 4xx whose body is exactly {title, detail, status, requestId} with
// requestId = X-Request-Id; never a 5xx, never a stack trace or a file path of ours.
import type { RawResponse } from "./raw-http.js";

/** "4xx": the case is invalid on purpose; "2xx": it is valid; "any": either, but well formed. */
export type Expectation = "2xx" | "4xx" | "any";

// A V8 stack frame ("    at fn (/path/file.ts:12:5)" or "at /path/file.js:3:1"), a source path
// of this repository or of node_modules, or Node's internal module paths.
const LEAKS: readonly RegExp[] = [
  /\bat (?:async )?[\w$.<>[\] ]*\(?(?:file:\/\/|\/|node:)[^\s)]*:\d+:\d+\)?/,
  /\/(?:work|home|usr|tmp|app)\/[\w./-]+\.(?:[cm]?[jt]s)\b/,
  /node_modules\//,
  /\bnode:internal\b/,
  /\b(?:TypeError|ReferenceError|RangeError|SyntaxError): /,
];

export function leakIn(text: string): string | undefined {
  for (const re of LEAKS) {
    const m = re.exec(text);
    if (m) return m[0];
  }
  return undefined;
}

/** A 2xx that is a stream which never ends by itself (endpoints.ts `stream`). */
export interface StreamShape {
  contentType: string;
  /** The stream's first chunk, exactly: the client knows it is connected. */
  firstChunk: string;
  /** Problem with what came after the first chunk before the client left, or undefined. */
  rest?(text: string): string | undefined;
}

/** For raw-http's `until`: a streamed 2xx is read to its first chunk, then left. */
export function untilFirstChunk(stream: StreamShape) {
  const bytes = Buffer.byteLength(stream.firstChunk);
  return (head: { status: number }, body: Buffer) => head.status >= 200 && head.status < 300 && body.length >= bytes;
}

/** Returns the problems with an answer (empty when it is fine). */
export function problemsWith(
  res: RawResponse,
  expected: Expectation,
  okShape: (json: any) => string | undefined,
  method = "GET",
  /** The one 2xx status the endpoint answers (undefined: any 2xx, e.g. another route's). */
  okStatus?: number,
  /** Set when the endpoint's 2xx is an endless stream, read only to its first chunk. */
  stream?: StreamShape,
  /**
   * The OTLP/HTTP routes: every error answer (the service's own 400, 413 and 415, and the 401,
   * 403, 404, 429 or 503 of the layers before it) is a google.rpc.Status in the request's
   * encoding, as the OTLP specification says, not our error body.
   */
  otlp?: boolean,
): string[] {
  const problems: string[] = [];
  const { status } = res;
  if (okStatus !== undefined && status >= 200 && status < 300 && status !== okStatus)
    problems.push(`status ${status}, the endpoint's success is ${okStatus}`);
  const leak = leakIn(res.text);
  if (leak) problems.push(`body leaks internals: ${JSON.stringify(leak)}`);
  if (status >= 500 || status < 200 || (status >= 300 && status < 400 && status !== 304)) {
    problems.push(`status ${status}`);
  }
  if (expected === "2xx" && !(status >= 200 && status < 300)) problems.push(`expected a 2xx, got ${status}`);
  if (expected === "4xx" && !(status >= 400 && status < 500)) problems.push(`expected a 4xx, got ${status}`);
  const requestId = res.headers["x-request-id"];
  if (typeof requestId !== "string" || requestId === "") problems.push("no X-Request-Id header");
  // A HEAD answer has no body by definition (RFC 9110 §9.3.2).
  if (method === "HEAD") return problems;
  // A request Node's HTTP parser refuses (a method no HTTP server knows, headers over the limit)
  // is answered before anything reads its path: our error body, as Envoy's codec answers it.
  if (otlp && status >= 400 && !isParserRefusal(res.text)) {
    const wrong = isErrorBody(res.text) ? "our error body, not a google.rpc.Status" : otlpStatusProblem(res);
    if (wrong) problems.push(wrong);
    return problems;
  }
  if (status >= 400) {
    if (!String(res.headers["content-type"] ?? "").startsWith("application/json"))
      problems.push(`error content-type ${String(res.headers["content-type"])}`);
    let json: any;
    try {
      json = JSON.parse(res.text);
    } catch {
      problems.push(`error body is not JSON: ${res.text.slice(0, 120)}`);
      return problems;
    }
    const keys = json && typeof json === "object" && !Array.isArray(json) ? Object.keys(json).sort().join(",") : "";
    if (keys !== "detail,requestId,status,title") problems.push(`error body keys are [${keys}]`);
    else {
      if (json.status !== status) problems.push(`error body status ${json.status} ≠ ${status}`);
      if (typeof json.title !== "string" || json.title === "") problems.push("error title is not a non-empty string");
      if (typeof json.detail !== "string") problems.push("error detail is not a string");
      if (json.requestId !== requestId) problems.push("error requestId ≠ X-Request-Id");
    }
  } else if (stream !== undefined && status >= 200 && status < 300) {
    const contentType = String(res.headers["content-type"] ?? "");
    if (!contentType.startsWith(stream.contentType))
      problems.push(`stream content-type ${contentType}, not ${stream.contentType}`);
    if (!res.text.startsWith(stream.firstChunk))
      problems.push(`the stream does not begin with ${JSON.stringify(stream.firstChunk)}: ${res.text.slice(0, 120)}`);
    else {
      const wrong = stream.rest?.(res.text.slice(stream.firstChunk.length));
      if (wrong) problems.push(`the stream: ${wrong}`);
    }
    if (!res.cut) problems.push("the stream ended by itself");
  } else if (status === 204) {
    if (res.text !== "") problems.push(`204 with a body: ${res.text.slice(0, 120)}`);
  } else if (status >= 200 && status < 300) {
    let json: any;
    try {
      json = JSON.parse(res.text);
    } catch {
      problems.push(`2xx body is not JSON: ${res.text.slice(0, 120)}`);
      return problems;
    }
    const wrong = okShape(json);
    if (wrong) problems.push(`2xx body: ${wrong}`);
  }
  return problems;
}

/** The error body of a request the HTTP parser refused (services/edge/client-error.ts gives these details). */
function isParserRefusal(text: string): boolean {
  if (!isErrorBody(text)) return false;
  const { detail } = JSON.parse(text) as { detail: string };
  return (
    detail === "Request line or headers too large" ||
    detail === "Request headers not received in time" ||
    detail.startsWith("Malformed HTTP request (")
  );
}

function isErrorBody(text: string): boolean {
  try {
    const json = JSON.parse(text);
    return json !== null && typeof json === "object" && "title" in json && "requestId" in json;
  } catch {
    return false;
  }
}

/** What is wrong with an OTLP error answer: a google.rpc.Status with a message, JSON or protobuf. */
function otlpStatusProblem(res: RawResponse): string | undefined {
  const type = String(res.headers["content-type"] ?? "");
  if (type.startsWith("application/x-protobuf")) return res.text === "" ? "empty OTLP error body" : undefined;
  if (!type.startsWith("application/json")) return `OTLP error content-type ${type}`;
  let json: any;
  try {
    json = JSON.parse(res.text);
  } catch {
    return `OTLP error body is not JSON: ${res.text.slice(0, 120)}`;
  }
  const extra = Object.keys(json ?? {}).filter((k) => !["code", "message", "details"].includes(k));
  if (extra.length > 0) return `OTLP error body has keys [${extra.join(",")}], not a google.rpc.Status`;
  return typeof json.message === "string" && json.message !== "" ? undefined : "OTLP error body without a message";
}

/** A problem when a 400 does not name the field it is about ("bad input gets a 4xx naming the field"). */
export function unnamedField(res: RawResponse, field: string): string | undefined {
  let detail: unknown;
  try {
    const json = JSON.parse(res.text);
    // An OTLP google.rpc.Status names it in its message, by its proto name or its JSON name.
    detail = json.detail ?? json.message;
  } catch {
    return undefined; // problemsWith already says the body is not JSON
  }
  const snake = field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return typeof detail === "string" && (detail.includes(field) || detail.includes(snake))
    ? undefined
    : `the 400 does not name ${field}: ${JSON.stringify(detail)}`;
}
