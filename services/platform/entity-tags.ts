// Entity tags (RFC 9110 §8.8.3) and If-None-Match, for every answer that can be revalidated: the
// analytics endpoints (a hash of their content) and the web module's files. A request whose
// If-None-Match names the current tag gets a bodiless 304, which a handler asks either edge for
// with the x-http-code response header.
import { createHash } from "node:crypto";

/**
 * The ETag of a representation given as texts that determine it (JSON fragments, digests of
 * stored fragments, a file's bytes): hashing those avoids serializing a large response only to
 * hash it.
 */
export function etagOfParts(parts: ReadonlyArray<string | Uint8Array>): string {
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
