// WebService (proto/agentplane/web/v1/web.proto): the dashboard's page and assets from the files
// read at start (files.ts), answered with their caching headers (answer.ts).
import type { ServiceImpl } from "@connectrpc/connect";
import type { WebService } from "../../gen/agentplane/web/v1/web_pb.js";
import { DomainError, notFound } from "../platform/errors.js";
import { fileAnswer } from "./answer.js";
import { API_REFERENCE_CSP, type ApiReferenceFiles } from "./api-reference.js";
import type { StaticFile } from "./files.js";

/**
 * The dashboard's page: everything it loads comes from this origin (no CDN), and only this
 * origin's API is called with the key its user enters. Its styles are set by script (uPlot
 * positions its elements), hence 'unsafe-inline' for styles alone.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Headers of every page: nothing is framed, and no URL travels to another site in a Referer. */
const PAGE_HEADERS = {
  "content-security-policy": DASHBOARD_CSP,
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};
const REFERENCE_PAGE_HEADERS = { ...PAGE_HEADERS, "content-security-policy": API_REFERENCE_CSP };

export interface WebDeps {
  /** The dashboard's build, by path relative to web/dist ("index.html", "assets/index-3f2a.js"). */
  readonly dashboard: ReadonlyMap<string, StaticFile>;
  /** The OpenAPI document, the reference page and its bundle (api-reference.ts). */
  readonly apiReference: ApiReferenceFiles;
}

const NOT_BUILT =
  "the dashboard is not built in this installation: run `npm run build:web` (npm install does it) and restart";
const NOT_BUILT_DOCS =
  "the API reference page comes with the dashboard's build, which this installation lacks: run `npm run build:web` (npm install does it) and restart; the document itself is at /openapi.json";

export function createWebService({ dashboard, apiReference }: WebDeps): Partial<ServiceImpl<typeof WebService>> {
  return {
    async *getDashboard(_req, ctx) {
      const page = dashboard.get("index.html");
      if (page === undefined) throw new DomainError("not_found", NOT_BUILT);
      // Revalidated on every load (no-cache), so that a new build's asset names are picked up at once.
      yield* fileAnswer(ctx, page, { cacheControl: "no-cache", headers: PAGE_HEADERS });
    },
    async *getAsset(req, ctx) {
      const file = dashboard.get(`assets/${req.path}`);
      if (file === undefined) throw notFound(`asset "${req.path.slice(0, 200)}"`);
      // Vite names every asset by a hash of its content: a name never changes meaning.
      yield* fileAnswer(ctx, file, { cacheControl: "public, max-age=31536000, immutable" });
    },
    // Revalidated on every load: a new version of the server may answer another document.
    async *getOpenApiDocument(_req, ctx) {
      yield* fileAnswer(ctx, apiReference.document, { cacheControl: "no-cache" });
    },
    async *getApiReference(_req, ctx) {
      if (apiReference.page === undefined) throw new DomainError("not_found", NOT_BUILT_DOCS);
      yield* fileAnswer(ctx, apiReference.page, { cacheControl: "no-cache", headers: REFERENCE_PAGE_HEADERS });
    },
  };
}
