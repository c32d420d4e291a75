// The mapping threads: what a thread answers is what the main thread's own mapping of the same
// body answers; the pairs an export names come first; a process where no thread can start maps on
// its main thread; a thread that dies with a job in hand answers it UNAVAILABLE with Retry-After,
// and the next job starts another.
import { create, toBinary } from "@bufbuild/protobuf";
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { ExportLogsServiceRequestSchema } from "../../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import { DomainError } from "../../platform/errors.js";
import type { Logger } from "../../platform/logger.js";
import { DecodeBudget } from "./decode-budget.js";
import { mapHttpExport, type MappingJob } from "./mapping-job.js";
import { COMPILED, MappingThreads, startMappingWorkerFromSource } from "./mapping-pool.js";

const ORG = "org-mapping-pool-test";

function logsJob(records: number): MappingJob {
  const attr = (key: string, value: string) => ({ key, value: { value: { case: "stringValue" as const, value } } });
  const body = create(ExportLogsServiceRequestSchema, {
    resourceLogs: [
      {
        resource: { attributes: [attr("user.email", "a@example.com"), attr("session.id", "s-1")] },
        scopeLogs: [
          {
            scope: { name: "com.anthropic.claude_code.events" },
            logRecords: Array.from({ length: records }, (_, i) => ({
              timeUnixNano: 1_764_000_000_000_000_000n + BigInt(i) * 1000n,
              eventName: i % 2 === 0 ? "claude_code.user_prompt" : "claude_code.tool_result",
              // Every third record names another user, every fifth another organization.
              attributes: [
                attr("tool_name", "Read"),
                ...(i % 3 === 0 ? [attr("user.email", "b@example.com")] : []),
                ...(i % 5 === 0 ? [attr("organization.id", "org-elsewhere")] : []),
              ],
            })),
          },
        ],
      },
    ],
  });
  return {
    kind: "logs",
    contentType: "application/x-protobuf",
    data: toBinary(ExportLogsServiceRequestSchema, body),
    orgId: ORG,
  };
}

/** A logger that keeps what it is told. */
function recordingLogger(): { logger: Logger; lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (_obj: unknown, msg?: string) => lines.push({ level, msg: msg ?? "" });
  const logger = { warn: at("warn"), error: at("error"), info: at("info"), debug: at("debug") } as unknown as Logger;
  return { logger, lines };
}

const opened: MappingThreads[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((t) => t.close()));
});

describe("the OTLP mapping threads", () => {
  it("are started by default only by the compiled service (from source, bodies are mapped on the main thread)", async () => {
    expect(COMPILED).toBe(false);
    const { logger, lines } = recordingLogger();
    const threads = new MappingThreads(logger);
    opened.push(threads);
    const job = logsJob(20);
    expect(await threads.map(job)).toEqual(await mapHttpExport(job));
    expect(lines).toEqual([]);
  });

  it("answer what the main thread's mapping of the same body answers, on a thread of their own", async () => {
    let started = 0;
    const { logger, lines } = recordingLogger();
    const threads = new MappingThreads(logger, 2, (workerData) => {
      started++;
      return startMappingWorkerFromSource(workerData);
    });
    opened.push(threads);
    const job = logsJob(500);
    const here = await mapHttpExport(job);
    const [first, second] = await Promise.all([threads.map(job), threads.map(job)]);
    expect(first).toEqual(here);
    expect(second).toEqual(here);
    // Two jobs at once went to two threads, and the log says each started; nothing fell back to
    // the main thread.
    expect(started).toBe(2);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ["debug", "an OTLP mapping thread started"],
      ["debug", "an OTLP mapping thread started"],
    ]);
    // The mapping is not empty: the test compares something.
    expect("mapped" in here && here.mapped?.events.length).toBe(500);
  });

  it("tell the pairs of user.email and organization.id an export names before the mapped export", async () => {
    const threads = new MappingThreads(undefined, 1, startMappingWorkerFromSource);
    opened.push(threads);
    const seen: string[] = [];
    const reply = await threads.map(logsJob(30), (named) => seen.push(`named ${JSON.stringify(named)}`));
    seen.push("reply");
    expect(seen).toEqual([
      `named ${JSON.stringify([
        ["b@example.com", "org-elsewhere"],
        ["a@example.com", null],
        ["b@example.com", null],
        ["a@example.com", "org-elsewhere"],
      ])}`,
      "reply",
    ]);
    expect("mapped" in reply && reply.mapped?.named.length).toBe(4);
  });

  it("refuse an undecodable body as OTLP answers it (400), with the decoder's reason", async () => {
    const threads = new MappingThreads(undefined, 1, startMappingWorkerFromSource);
    opened.push(threads);
    const job = logsJob(10);
    const reply = await threads.map({ ...job, data: job.data.subarray(0, job.data.length - 7) });
    expect(reply).toMatchObject({ refused: { status: 400 } });
    expect("refused" in reply && reply.refused.message).toMatch(/not a valid ExportLogsServiceRequest in protobuf/);
  });

  it("take a body alone however large, refuse one as busy while the process's decode budget is spent elsewhere, and give its bytes back", async () => {
    const budget = new DecodeBudget(undefined, 1000);
    const threads = new MappingThreads(undefined, 1, startMappingWorkerFromSource, budget);
    opened.push(threads);
    const job = logsJob(40);
    expect(job.data.length).toBeGreaterThan(budget.limit);
    const here = await mapHttpExport(job);
    expect(await threads.map(job)).toEqual(here);
    expect(budget.inUse).toBe(0);
    // Bytes taken on this thread, as another body's decoding on another thread takes them: the
    // thread sees them through the shared count.
    expect(budget.take(10)).toBe(true);
    expect(await threads.map(job)).toEqual({
      busy: "the OTLP receiver is decoding as many bytes of exports as it holds at once (1000); retry after 1 s",
    });
    budget.give(10);
    expect(await threads.map(job)).toEqual(here);
    expect(budget.inUse).toBe(0);
  });

  it("map on the main thread, and say so once, where no thread can start", async () => {
    const { logger, lines } = recordingLogger();
    const threads = new MappingThreads(
      logger,
      1,
      () => new Worker("throw new Error('no threads here')", { eval: true }),
    );
    opened.push(threads);
    const job = logsJob(20);
    expect(await threads.map(job)).toEqual(await mapHttpExport(job));
    expect(await threads.map(job)).toEqual(await mapHttpExport(job));
    expect(lines.map((l) => l.level)).toEqual(["debug", "warn"]);
    expect(lines[1]!.msg).toMatch(/no OTLP mapping thread could start/);
  });

  it("answer UNAVAILABLE with Retry-After when a thread dies with a job in hand; the next job starts another", async () => {
    // The first thread answers one job with a canned reply, then dies on the next.
    const dying = `
      const { parentPort } = require("node:worker_threads");
      let jobs = 0;
      parentPort.on("message", (job) => {
        if (jobs++ === 0) parentPort.postMessage({ id: job.id, reply: { encoding: "protobuf" } });
        else process.exit(3);
      });`;
    let started = 0;
    const { logger, lines } = recordingLogger();
    const threads = new MappingThreads(logger, 1, (workerData) =>
      started++ === 0 ? new Worker(dying, { eval: true }) : startMappingWorkerFromSource(workerData),
    );
    opened.push(threads);
    const job = logsJob(10);
    expect(await threads.map(job)).toEqual({ encoding: "protobuf" });
    const refused = await threads.map(job).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(DomainError);
    expect((refused as DomainError).kind).toBe("unavailable");
    expect((refused as DomainError).headers).toEqual({ "retry-after": "1" });
    expect(lines.map((l) => l.level)).toEqual(["debug", "error"]);
    expect(await threads.map(job)).toEqual(await mapHttpExport(job));
    expect(started).toBe(2);
  });
});
