// Content negotiation of the response's content coding (RFC 9110 §12.5.3), reduced to the one
// coding the edge produces: deflate (zlib format), for pre-rendered bodies (platform/
// rendered-response.ts).

const Q_RE = /^q=([01](?:\.\d{0,3})?)$/i;

/** Whether the Accept-Encoding header allows `deflate`: listed with q > 0, or `*` with q > 0 and deflate not refused. */
export function acceptsDeflate(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  const text = Array.isArray(header) ? header.join(",") : header;
  let deflate: number | undefined;
  let any: number | undefined;
  for (const item of text.split(",")) {
    const [rawName, ...params] = item.split(";");
    const name = rawName!.trim().toLowerCase();
    if (name !== "deflate" && name !== "*") continue;
    let q = 1;
    for (const p of params) {
      const m = Q_RE.exec(p.trim());
      if (m) q = Number(m[1]);
    }
    if (name === "deflate") deflate = q;
    else any = q;
  }
  if (deflate !== undefined) return deflate > 0;
  return any !== undefined && any > 0;
}
