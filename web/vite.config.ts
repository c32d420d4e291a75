// The dashboard's build: web/index.html and web/src/ into web/dist/, hashed files under /assets/
// (served immutable by the web module; index.html is served no-cache). `npm run build:web`.
// `npx vite web` serves it with hot reload and sends the API paths to a running `npm start`
// (AGENTPLANE_URL, default http://127.0.0.1:8080), so the page and the API share an origin as
// they do when the server serves the built page itself.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";

const api = process.env.AGENTPLANE_URL ?? "http://127.0.0.1:8080";
const proxy = { "/api": { target: api, changeOrigin: false } };

/**
 * Scalar's standalone bundle, which renders the API reference at /docs (services/web/
 * api-reference.ts), goes into the build as assets/scalar-api-reference-<version>.js: served by
 * the web module like the dashboard's files, so the running server needs no Scalar package (a
 * devDependency: its 150 MB of packages stay out of production installs and the image).
 */
function scalarBundle(): Plugin {
  const entry = createRequire(import.meta.url).resolve("@scalar/api-reference");
  const packageDir = join(dirname(entry), "..");
  const { version } = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as { version: string };
  return {
    name: "agentplane-scalar-bundle",
    apply: "build",
    generateBundle() {
      this.emitFile({
        type: "asset",
        fileName: `assets/scalar-api-reference-${version}.js`,
        source: readFileSync(join(packageDir, "dist", "browser", "standalone.js")),
      });
    },
  };
}

export default defineConfig({
  plugins: [scalarBundle()],
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/",
  build: {
    outDir: "dist",
    assetsDir: "assets",
    emptyOutDir: true,
    // The page talks to this server only: nothing is fetched from elsewhere, not even a font.
    assetsInlineLimit: 0,
    target: "es2022",
  },
  server: { proxy },
  preview: { proxy },
});
