// HTTP caching of analytics responses: a day's aggregates only change when it is rolled up
// again, so every response carries a strong ETag (a hash of its content, platform/entity-tags.ts)
// and a short private max-age; a request whose If-None-Match names the current ETag gets a
// bodiless 304.
import { etagOfParts } from "../../platform/entity-tags.js";

/** Private: responses depend on the caller's organization. Revalidation is cheap (ETag). */
export const CACHE_CONTROL = "private, max-age=300";

export function etagOf(content: unknown): string {
  return etagOfParts([JSON.stringify(content)]);
}
