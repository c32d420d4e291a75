// The OpenAPI document and the API reference page (docs/openapi.md). The document is
// gen/openapi/openapi.json, which `npm run generate` writes from the protos; imported here, so
// that the compiled dist/ carries it. The page is rendered in the browser by @scalar/api-reference
// from its standalone bundle, which the dashboard's build carries (web/vite.config.ts) and this
// server serves as an asset of its own: nothing is loaded from another origin.
import openApiDocument from "../../gen/openapi/openapi.json" with { type: "json" };
import { type StaticFile, staticFile } from "./files.js";

/**
 * The reference page's policy: its script and the bundle from this origin only; Scalar sets
 * styles inline and shows images from data: URLs; its "try it" calls go to this origin's API.
 */
export const API_REFERENCE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export interface ApiReferenceFiles {
  /** GET /openapi.json. */
  readonly document: StaticFile;
  /** GET /docs; undefined without the dashboard's build, which carries Scalar's bundle. */
  readonly page: StaticFile | undefined;
}

/** Scalar's settings: no fonts from its CDN, no telemetry, no link to its hosted services. */
const SCALAR_CONFIGURATION = {
  withDefaultFonts: false,
  telemetry: false,
  hideClientButton: true,
  showDeveloperTools: "never",
  mcp: { disabled: true },
  agent: { disabled: true },
};

/** Scalar's bundle in the dashboard's build (web/vite.config.ts puts it there, its version in the name). */
const BUNDLE = /^assets\/(scalar-api-reference-[\w.-]+\.js)$/;

/**
 * The document, and the page with the bundle when the dashboard's build holds one (else the page
 * is undefined: /docs then says how to build it).
 */
export function loadApiReferenceFiles(dashboard: ReadonlyMap<string, StaticFile>): ApiReferenceFiles {
  const bundlePath = [...dashboard.keys()].find((path) => BUNDLE.test(path));
  return {
    document: staticFile(Buffer.from(JSON.stringify(openApiDocument)), "openapi.json"),
    page: bundlePath === undefined ? undefined : staticFile(Buffer.from(referencePage(`/${bundlePath}`)), "docs.html"),
  };
}

/** The page: Scalar's bundle mounts itself on the script element that names the document. */
function referencePage(bundlePath: string): string {
  const configuration = JSON.stringify(SCALAR_CONFIGURATION).replaceAll("'", "&#39;");
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>agentplane API reference</title>
  </head>
  <body>
    <script id="api-reference" data-url="/openapi.json" data-configuration='${configuration}'></script>
    <script src="${bundlePath}"></script>
  </body>
</html>
`;
}
