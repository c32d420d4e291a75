// A mapping thread (mapping-pool.ts starts it): decodes OTLP/HTTP bodies and maps them
// (mapping-job.ts), one job per message, and answers each with plain data: first the pairs of
// user.email and organization.id the export names (the main thread looks their users up while
// the mapping runs), then the entries in parts as they are mapped (the main thread takes each in
// while the next is mapped), then the mapped export with the last part. It touches no database, no socket and nothing the
// main thread holds.
import { parentPort } from "node:worker_threads";
import { mapHttpExport, type MappingJob, type MappingReply } from "./mapping-job.js";

parentPort?.on("message", (job: MappingJob & { id: number }) => {
  mapHttpExport(
    job,
    (named) => parentPort?.postMessage({ id: job.id, named }),
    (part) => parentPort?.postMessage({ id: job.id, part }),
  ).then(
    (reply) => parentPort?.postMessage({ id: job.id, reply }),
    (e: unknown) =>
      parentPort?.postMessage({
        id: job.id,
        reply: { failed: e instanceof Error ? (e.stack ?? e.message) : String(e) } satisfies MappingReply,
      }),
  );
});
