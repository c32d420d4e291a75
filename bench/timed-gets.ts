// The analytics benchmark's load generator (scripts/bench-analytics.ts starts it compiled, as a
// process of its own: the benchmark's process has the generator's and the rollup's heap, and
// its garbage collection would be timed as the service's latency).
//
//   node timed-gets.js '{"url": "...", "headers": {...}, "warmup": 3, "count": 100}'
//
// Sequential GETs on one keep-alive connection (bench/raw-http.ts), each timed to the last byte
// received, not decoded nor kept; then the last answer, kept, is decoded (inflated when
// compressed, timed) and checked: it parses as JSON and holds rows. Prints one JSON line:
// { times, bytes, encoding, inflateMs }.
import { gunzipSync, inflateSync } from "node:zlib";
import { RawHttpClient } from "./raw-http.js";

interface Job {
  url: string;
  headers: Record<string, string>;
  warmup: number;
  count: number;
}

async function main(): Promise<void> {
  const job = JSON.parse(process.argv[2] ?? "") as Job;
  const url = new URL(job.url);
  const path = url.pathname + url.search;
  const client = new RawHttpClient(url.hostname, Number(url.port));
  const times: number[] = [];
  let last: Awaited<ReturnType<RawHttpClient["get"]>> | undefined;
  for (let i = 0; i < job.warmup + job.count; i++) {
    const start = performance.now();
    // Only the last answer is kept (to check it); the others are counted as they arrive.
    last = await client.get(path, job.headers, i === job.warmup + job.count - 1);
    const ms = performance.now() - start;
    if (last.status !== 200) throw new Error(`${path}: HTTP ${last.status}`);
    if (i >= job.warmup) times.push(ms);
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
  process.stdout.write(JSON.stringify({ times, bytes: last!.length, encoding: encoding ?? null, inflateMs }) + "\n");
}

await main();
