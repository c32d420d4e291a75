// HTTP caching of analytics responses: a day's aggregates only change when it is rolled up
// again, so every response carries a strong ETag (a hash of its content) and a short private
// max-age; a request whose If-None-Match names the current ETag gets a bodiless 304, which the
// handler asks the edge for with the x-http-code response header.
import { createHash } from "node:crypto";

/** Private: responses depend on the caller's organization. Revalidation is cheap (ETag). */
export const CACHE_CONTROL = "private, max-age=300";

export function etagOf(content: unknown): string {
  return etagOfParts([JSON.stringify(content)]);
}

/**
 * The ETag of a representation given as texts that determine it (JSON fragments, digests of
 * stored fragments): hashing those avoids serializing a large response only to hash it.
 */
export function etagOfParts(parts: ReadonlyArray<string | Buffer>): string {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part).update("\n");
  return `"${hash.digest("base64url").slice(0, 32)}"`;
}

/** RFC 9110 §13.1.2: weak comparison, a list of tags or "*". */
export function matchesIfNoneMatch(header: string | null, etag: string): boolean {
  if (!header) return false;
  const strip = (tag: string) => tag.trim().replace(/^W\//, "");
  const wanted = strip(etag);
  return header.split(",").some((tag) => {
    const t = strip(tag);
    return t === "*" || t === wanted;
  });
}
