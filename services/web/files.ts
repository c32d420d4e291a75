// The files the web module serves, read once at start from the dashboard's build (web/dist, made
// by `npm run build:web`) and held in memory: a build is a few hundred KiB, and a lookup in a
// map by the exact path asked for can reach nothing but those files (no path is ever joined onto
// the file system from a request).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, extname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { etagOfParts } from "../platform/entity-tags.js";

export interface StaticFile {
  readonly bytes: Buffer;
  readonly contentType: string;
  /** Strong: a hash of the bytes. */
  readonly etag: string;
  /** Text worth compressing for a client that takes a coding. */
  readonly compressible: boolean;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".map": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};
const COMPRESSIBLE = new Set([".html", ".js", ".mjs", ".css", ".json", ".map", ".svg", ".txt"]);

export function staticFile(bytes: Buffer, name: string): StaticFile {
  const extension = extname(name).toLowerCase();
  return {
    bytes,
    contentType: CONTENT_TYPES[extension] ?? "application/octet-stream",
    etag: etagOfParts([bytes]),
    compressible: COMPRESSIBLE.has(extension),
  };
}

/** Every file under `dir`, by its path relative to it with "/" separators; empty when `dir` is absent. */
export function readStaticFiles(dir: string): ReadonlyMap<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  if (!existsSync(dir)) return files;
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.set(relative(dir, path).split(sep).join("/"), staticFile(readFileSync(path), name));
    }
  };
  walk(dir);
  return files;
}

/**
 * The package's root (the folder holding package.json): from the sources and from the compiled
 * dist/ alike, which sit at different depths below it.
 */
export function packageRoot(from: string = fileURLToPath(import.meta.url)): string {
  let dir = dirname(from);
  while (!existsSync(join(dir, "package.json"))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${from}`);
    dir = parent;
  }
  return dir;
}
