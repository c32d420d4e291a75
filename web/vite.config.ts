// The dashboard's build: web/index.html and web/src/ into web/dist/, hashed files under /assets/
// (served immutable by the web module; index.html is served no-cache). `npm run build:web`.
// `npx vite web` serves it with hot reload and sends the API paths to a running `npm start`
// (AGENTPLANE_URL, default http://127.0.0.1:8080), so the page and the API share an origin as
// they do when the server serves the built page itself.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const api = process.env.AGENTPLANE_URL ?? "http://127.0.0.1:8080";
const proxy = { "/api": { target: api, changeOrigin: false } };

export default defineConfig({
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
