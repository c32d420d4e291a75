// Content negotiation of the response's content coding (RFC 9110 §12.5.3), reduced to the codings
// the edge produces for pre-rendered bodies (platform/rendered-response.ts): deflate (the zlib
// format) and gzip, both assembled from the same stored deflate blocks (platform/deflate-parts.ts).
import type { ContentCoding } from "../platform/deflate-parts.js";

const Q_RE = /^q=([01](?:\.\d{0,3})?)$/i;

/**
 * The coding the client prefers among ours, by its q-values: listed with q > 0, or covered by `*`
 * with q > 0 and not refused by name ("x-gzip" is gzip, RFC 9110 §18.6). Equal preference goes to
 * deflate. Null: neither is acceptable, the body goes as it is.
 */
export function preferredCoding(header: string | string[] | undefined): ContentCoding | null {
  if (header === undefined) return null;
  const text = Array.isArray(header) ? header.join(",") : header;
  const named = new Map<string, number>();
  let any: number | undefined;
  for (const item of text.split(",")) {
    const [rawName, ...params] = item.split(";");
    let name = rawName!.trim().toLowerCase();
    if (name === "x-gzip") name = "gzip";
    if (name !== "deflate" && name !== "gzip" && name !== "*") continue;
    let q = 1;
    for (const p of params) {
      const m = Q_RE.exec(p.trim());
      if (m) q = Number(m[1]);
    }
    if (name === "*") any = q;
    else named.set(name, Math.max(q, named.get(name) ?? 0));
  }
  const qOf = (coding: ContentCoding) => named.get(coding) ?? any ?? 0;
  const deflate = qOf("deflate");
  const gzip = qOf("gzip");
  if (deflate <= 0 && gzip <= 0) return null;
  return deflate >= gzip ? "deflate" : "gzip";
}
