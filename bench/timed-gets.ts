// The analytics benchmark's load generator (scripts/bench-analytics.ts starts it compiled, as a
// process of its own: the benchmark's process has the generator's and the rollup's heap, and
// its garbage collection would be timed as the service's latency).
//
//   node timed-gets.js '{"url": "...", "headers": {...}, "warmup": 3, "count": 100}'
//
// Sequential GETs on one keep-alive connection (bench/raw-http.ts), each timed to the last byte
// received, not decoded nor kept; then the last answer, kept, is decoded (inflated when
// compressed, timed) and checked: it parses as JSON and holds rows. Prints one JSON line:
// { times, bytes, encoding, inflateMs, pages }.
//
// With `pageCursor` (a query parameter's name), the GETs walk the pages: each answer is kept and,
// after its timing, parsed for meta.next_cursor, which the next GET sends; after the last page
// the walk starts again at the first. Without it every GET asks for the same URL.
import { gunzipSync, inflateSync } from "node:zlib";
import { RawHttpClient } from "./raw-http.js";

interface Job {
  url: string;
  headers: Record<string, string>;
  warmup: number;
  count: number;
  pageCursor?: string;
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? "") as Job;
  const url = new URL(job.url);
  const firstPath = url.pathname + url.search;
  const client = new RawHttpClient(url.hostname, Number(url.port));
  const times: number[] = [];
  let last: Awaited<ReturnType<RawHttpClient["get"]>> | undefined;
  let path = firstPath;
  let pages = 0;
  for (let i = 0; i < job.warmup + job.count; i++) {
    const start = performance.now();
    // Only the last answer is kept (to check it), and each page of a walk (for its cursor); the
    // others are counted as they arrive.
    last = await client.get(path, job.headers, i === job.warmup + job.count - 1 || job.pageCursor !== undefined);
    const ms = performance.now() - start;
    if (last.status !== 200) throw new Error(`${path}: HTTP ${last.status}`);
    if (i >= job.warmup) times.push(ms);
    if (job.pageCursor !== undefined) {
      if (last.headers.has("content-encoding")) throw new Error(`${path}: a page walk needs uncompressed answers`);
      const meta = (JSON.parse(last.body!.toString("utf8")) as { meta?: { next_cursor?: string } }).meta;
      const next = meta?.next_cursor ?? "";
      if (i >= job.warmup) pages++;
      const nextUrl = new URL(firstPath, url);
      if (next !== "") nextUrl.searchParams.set(job.pageCursor, next);
      path = nextUrl.pathname + nextUrl.search;
    }
  }
  client.close();
  const encoding = last!.headers.get("content-encoding");
  let text = last!.body!;
  let inflateMs: number | null = null;
  if (encoding === "deflate" || encoding === "gzip") {
    const start = performance.now();
    text = encoding === "gzip" ? gunzipSync(text) : inflateSync(text);
    inflateMs = performance.now() - start;
  } else if (encoding !== undefined) throw new Error(`${path}: unexpected Content-Encoding ${encoding}`);
  const parsed = JSON.parse(text.toString("utf8")) as { data?: unknown[] };
  if (!Array.isArray(parsed.data) || parsed.data.length === 0) throw new Error(`${path}: no rows in the answer`);
  process.stdout.write(
    `${JSON.stringify({ times, bytes: last!.length, encoding: encoding ?? null, inflateMs, pages })}\n`,
  );
}

await main();
