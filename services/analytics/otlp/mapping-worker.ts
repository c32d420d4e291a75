// A mapping thread (mapping-pool.ts starts it): decodes OTLP/HTTP bodies and maps them
// (mapping-job.ts), one job per message, and answers each with plain data: first the pairs of
// user.email and organization.id the export names (the main thread looks their users up while
// the mapping runs), then the entries in parts as they are mapped (the main thread takes each in
// while the next is mapped), then the mapped export with the last part. It touches no database, no socket and nothing the
// main thread holds.
import { parentPort, workerData } from "node:worker_threads";
import { DecodeBudget } from "./decode-budget.js";
import { mapHttpExport, type MappingJob, type MappingReply } from "./mapping-job.js";
import type { MappingWorkerData } from "./mapping-pool.js";

// The process's decode budget: the same count the other threads and the main thread keep.
const data = workerData as MappingWorkerData | undefined;
const budget = data ? new DecodeBudget(data.budget, data.budgetLimit) : undefined;

parentPort?.on("message", (job: MappingJob & { id: number }) => {
  mapHttpExport(
    job,
    (named) => parentPort?.postMessage({ id: job.id, named }),
    (part) => parentPort?.postMessage({ id: job.id, part }),
    budget,
  ).then(
    (reply) => parentPort?.postMessage({ id: job.id, reply }),
    (e: unknown) =>
      parentPort?.postMessage({
        id: job.id,
        reply: { failed: e instanceof Error ? (e.stack ?? e.message) : String(e) } satisfies MappingReply,
      }),
  );
});
