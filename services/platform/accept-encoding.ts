// Content negotiation of the response's content coding (RFC 9110 §12.5.3), reduced to the codings
// the analytics HttpBody routes produce (analytics/read/http-body.ts): gzip and deflate (the zlib
// format), both assembled from the same stored deflate blocks (platform/deflate-parts.ts). The
// service negotiates, from the Accept-Encoding either edge forwards, so both edges send the same.
import type { ContentCoding } from "../platform/deflate-parts.js";

/** A qvalue as RFC 9110 §12.4.2 writes it: 0 or 1, at most three decimals (and 1 only as 1.000). */
const Q_RE = /^q=(0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/i;

/**
 * The coding the client prefers among ours, by its q-values: listed with q > 0, or covered by `*`
 * with q > 0 and not refused by name ("x-gzip" is gzip, RFC 9110 §18.6). Equal preference goes to
 * gzip, the coding every client decodes alike (§8.4.1.2 warns that some send or expect deflate
 * without its zlib wrapper). Null: the body goes as it is, because neither is acceptable or the
 * client names `identity` with a higher q. An entry whose q-value is malformed is ignored, so a
 * refusal written wrongly does not turn into an acceptance.
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
    if (name !== "deflate" && name !== "gzip" && name !== "identity" && name !== "*") continue;
    let q: number | null = 1;
    for (const p of params) {
      const param = p.trim();
      if (!/^q\s*=/i.test(param)) continue;
      const m = Q_RE.exec(param);
      q = m ? Number(m[1]) : null;
    }
    if (q === null) continue;
    if (name === "*") any = q;
    else named.set(name, Math.max(q, named.get(name) ?? 0));
  }
  const qOf = (coding: ContentCoding) => named.get(coding) ?? any ?? 0;
  const gzip = qOf("gzip");
  const deflate = qOf("deflate");
  const best = Math.max(gzip, deflate);
  if (best <= 0) return null;
  // Identity is acceptable unless refused; it wins only where the client says it prefers it.
  const identity = named.get("identity");
  if (identity !== undefined && identity > best) return null;
  return gzip >= deflate ? "gzip" : "deflate";
}
