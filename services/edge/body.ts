// Reading the JSON request body: media type checks, a hard size limit enforced while reading
// (never buffering more than the limit), and JSON parsing.
import type { IncomingMessage } from "node:http";
import { firstTooDeep, MAX_JSON_NESTING } from "../platform/json-nesting.js";
import { refuseTooManyJsonValues } from "../platform/decode-errors.js";
import { ClientGoneError, EdgeHttpError } from "./errors.js";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** True when the request announces a body (a positive Content-Length, or chunked framing). */
export function announcesBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  if (length !== undefined) return Number(length) > 0;
  return req.headers["transfer-encoding"] !== undefined;
}

/** `application/json`, with any parameters (`; charset=utf-8`), case-insensitive. */
export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const semi = contentType.indexOf(";");
  const essence = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  return essence === "application/json";
}

/**
 * Reads and parses the body of a route that has a body rule. Returns undefined when the request
 * has no body (the message is then built from the path and query alone). When `signal` aborts
 * before the body is complete, rejects with its reason (the edge's 408 at the request deadline).
 */
export async function readJsonBody(req: IncomingMessage, maxBytes: number, signal?: AbortSignal): Promise<unknown> {
  if (!announcesBody(req)) return undefined;
  const contentType = req.headers["content-type"];
  if (!isJsonMediaType(contentType)) {
    throw new EdgeHttpError(
      415,
      contentType === undefined
        ? "Missing Content-Type; request bodies must be application/json"
        : `Unsupported Content-Type "${contentType}"; request bodies must be application/json`,
    );
  }
  const encoding = req.headers["content-encoding"];
  if (encoding !== undefined && encoding.toLowerCase() !== "identity") {
    throw new EdgeHttpError(415, `Unsupported Content-Encoding "${encoding}"`);
  }
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > maxBytes) {
    // Refuse before reading a byte.
    throw new EdgeHttpError(413, `Request body exceeds ${maxBytes} bytes`);
  }
  const raw = await readLimited(req, maxBytes, signal);
  if (raw.length === 0) return undefined;
  // Before JSON.parse builds them: values too many for their bytes (json-objects.ts).
  refuseTooManyJsonValues(raw);
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new EdgeHttpError(400, "Request body is not valid UTF-8");
  }
  let body: unknown;
  try {
    body = JSON.parse(text) as unknown;
  } catch (e) {
    throw new EdgeHttpError(400, `Malformed JSON in request body: ${(e as Error).message}`);
  }
  // Envoy's transcoder refuses deeper bodies while parsing, with these words (json-nesting.ts).
  const tooDeep = firstTooDeep(body, MAX_JSON_NESTING);
  if (tooDeep) {
    throw new EdgeHttpError(
      400,
      `Message too deep. Max recursion depth reached ${tooDeep.key === undefined ? "in array" : `for key '${tooDeep.key}'`}`,
    );
  }
  return body;
}

/**
 * Codings a raw body (a google.api.HttpBody request: the OTLP routes) may arrive in. The bytes
 * are passed on as they came, and the service undoes the gzip (analytics/otlp/wire.ts): Envoy's
 * transcoder does not decode a body either, and the Lua filter lets the same codings through.
 */
const RAW_BODY_CODINGS = new Set(["identity", "gzip"]);

/**
 * Reads the body of a route whose request is google.api.HttpBody, as Envoy's transcoder does:
 * whatever its Content-Type (the service judges it), within the size limit. An empty body is an
 * empty Uint8Array.
 */
export async function readRawBody(req: IncomingMessage, maxBytes: number, signal?: AbortSignal): Promise<Uint8Array> {
  const encoding = req.headers["content-encoding"];
  if (encoding !== undefined && !RAW_BODY_CODINGS.has(encoding.trim().toLowerCase())) {
    throw new EdgeHttpError(415, `Unsupported Content-Encoding "${encoding}"`);
  }
  if (!announcesBody(req)) return new Uint8Array();
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > maxBytes) {
    throw new EdgeHttpError(413, `Request body exceeds ${maxBytes} bytes`);
  }
  return readLimited(req, maxBytes, signal);
}

function readLimited(req: IncomingMessage, maxBytes: number, signal: AbortSignal | undefined): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
      signal?.removeEventListener("abort", onAbort);
    };
    const onAbort = () => {
      // As for 413: stop reading; the answer carries Connection: close, which drops the rest.
      cleanup();
      req.pause();
      chunks.length = 0;
      reject(signal!.reason as Error);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        // Stop reading: the caller answers 413 with Connection: close, which drops the rest.
        cleanup();
        req.pause();
        chunks.length = 0;
        reject(new EdgeHttpError(413, `Request body exceeds ${maxBytes} bytes`));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = () => {
      cleanup();
      reject(new ClientGoneError("client closed the connection while sending the body"));
    };
    const onClose = () => {
      if (req.complete) return; // 'end' handles completion
      cleanup();
      reject(new ClientGoneError("client closed the connection while sending the body"));
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}
