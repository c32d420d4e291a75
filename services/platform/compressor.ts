// What envoy.yaml's compressor filter does to a unary JSON answer, done by the TypeScript edge so
// both edges send the same representation: gzip for a client that chooses it, from 8 KiB, with
// `Vary: Accept-Encoding` and a weakened ETag. The rules are Envoy's (compressor filter v3,
// CompressorFilter::chooseEncoding and isResponseCompressible), not ours; test/deploy/envoy.test.ts
// checks that envoy.yaml still configures what this file assumes. The HttpBody streams
// (edge/http-body-stream.ts) are compressed by the service itself (analytics exports use these rules
// too) and never pass here. In platform/: the edge and the services both apply them.
import type { OutgoingHttpHeaders } from "node:http";
import { constants, gzipSync } from "node:zlib";

/** envoy.yaml: response_direction_config.common_config.min_content_length. */
export const COMPRESSOR_MIN_CONTENT_LENGTH = 8192;
/** envoy.yaml: response_direction_config.common_config.content_type. */
export const COMPRESSOR_CONTENT_TYPES: readonly string[] = ["application/json"];
/** envoy.yaml: compressor_library gzip, compression_level BEST_SPEED. */
const GZIP_OPTIONS = { level: constants.Z_BEST_SPEED } as const;

/**
 * Whether Envoy's compressor, with gzip its only compressor, chooses gzip for this Accept-Encoding:
 * the first entry with the highest q-value among gzip, identity and `*` wins (ties go to the
 * earlier entry); gzip;q=0 takes gzip out even for `*`; a q-value that does not parse drops its
 * entry; no entry with q > 0 means identity. Names are compared as written (Envoy does).
 */
export function compressorChoosesGzip(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  const text = Array.isArray(header) ? header.join(",") : header;
  let gzipAllowed = true;
  const entries: Array<{ name: string; q: number }> = [];
  for (const token of text.split(",")) {
    if (token.trim() === "") continue;
    const semicolon = token.indexOf(";");
    const name = (semicolon === -1 ? token : token.slice(0, semicolon)).trim();
    let q = 1;
    if (semicolon !== -1) {
      const params = token.slice(semicolon + 1);
      const eq = params.indexOf("=");
      if (eq !== -1 && params.slice(0, eq).trim().toLowerCase() === "q") {
        const value = params.slice(eq + 1).trim();
        // absl::SimpleAtof: a whole number, decimal or exponent; anything else drops the entry.
        if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(value)) continue;
        q = Number(value);
      }
    }
    entries.push({ name, q });
    if (q === 0 && name === "gzip") gzipAllowed = false;
  }
  let choice = { name: "identity", q: 0 };
  for (const e of entries) {
    const offered = (e.name === "gzip" && gzipAllowed) || e.name === "identity" || e.name === "*";
    if (offered && e.q > choice.q) choice = e;
  }
  if (choice.q <= 0 || choice.name === "identity") return false;
  return choice.name === "gzip" || gzipAllowed; // `*`: the first registered compressor, gzip
}

function mediaType(value: OutgoingHttpHeaders[string]): string {
  return String(value ?? "")
    .split(";", 1)[0]!
    .trim()
    .toLowerCase();
}

function hasNoTransform(value: OutgoingHttpHeaders[string]): boolean {
  const text = Array.isArray(value) ? value.join(",") : String(value ?? "");
  return text.split(",").some((d) => d.trim().toLowerCase() === "no-transform");
}

/**
 * The body to send for a 2xx-5xx answer with `headers` (content-type and content-length set),
 * compressed as Envoy's compressor would, and the headers changed as it changes them: a
 * compressible answer gets `Vary: Accept-Encoding` whatever the client takes; one the client
 * takes gzip for is gzipped and has a strong ETag made weak. (Envoy then sends it chunked; here
 * it goes with the compressed length: another framing of the same bytes.)
 */
export function compressLikeEnvoy(
  acceptEncoding: string | string[] | undefined,
  headers: OutgoingHttpHeaders,
  body: string,
): string | Buffer {
  const length = Number(headers["content-length"]);
  if (
    !(length >= COMPRESSOR_MIN_CONTENT_LENGTH) ||
    !COMPRESSOR_CONTENT_TYPES.includes(mediaType(headers["content-type"])) ||
    headers["content-encoding"] !== undefined ||
    hasNoTransform(headers["cache-control"])
  ) {
    return body;
  }
  const vary = headers["vary"];
  const varied = Array.isArray(vary) ? vary.join(",") : vary === undefined ? "" : String(vary);
  if (!varied.split(",").some((v) => v.trim().toLowerCase() === "accept-encoding"))
    headers["vary"] = varied === "" ? "Accept-Encoding" : `${varied}, Accept-Encoding`;
  if (!compressorChoosesGzip(acceptEncoding)) return body;
  const gzipped = gzipSync(body, GZIP_OPTIONS);
  headers["content-encoding"] = "gzip";
  headers["content-length"] = gzipped.length;
  const etag = headers["etag"];
  if (typeof etag === "string" && !etag.startsWith("W/")) headers["etag"] = `W/${etag}`;
  return gzipped;
}
