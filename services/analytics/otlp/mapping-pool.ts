// The OTLP exports' decoding and mapping (mapping-job.ts: OTLP/HTTP bodies, OTLP/gRPC messages
// left undecoded) on worker threads of their own.
//
// Why: decoding an export and mapping its items is most of the receiver's CPU (several µs an
// item: an export of 1,000 items takes milliseconds, one of 100,000 far longer). On the main
// thread, every other request and every other export's database answers waited behind it, and
// one thread bounded the whole receiver. On threads of their own, exports are mapped beside the
// main thread's work and beside each other, and a hostile export cannot stall the process. The
// main thread keeps what needs the database: attribution, cumulative state and the store
// (receiver.ts), and it looks an export's users up while the export is being mapped (the thread
// sends the user.email and organization.id pairs first).
//
// MAPPING_THREADS threads per process (two, or one on a machine with one core), each started at
// the first export that needs it and stopped after a minute without one; they never keep the
// process alive. If no thread can be started at all (a runtime without worker threads), the jobs
// run on the main thread, and the log says so once. If a thread dies
// while working (out of memory, say), its jobs are answered UNAVAILABLE with Retry-After, which
// exporters retry, and the next export starts another.
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { DomainError } from "../../platform/errors.js";
import type { Logger } from "../../platform/logger.js";
import { DecodeBudget } from "./decode-budget.js";
import { joinParts, type MappedPart, type NamedPair, type OnNamed } from "./mapping.js";
import { mapHttpExport, type MappingJob, type MappingReply, RETRY_AFTER_SECONDS } from "./mapping-job.js";

/** Threads per process: beside the main thread and the database, more would only queue for cores. */
export const MAPPING_THREADS = Math.min(2, availableParallelism());

/** How long a thread waits for the next export before it stops. */
const IDLE_MS = 60_000;

/**
 * Whether this process runs compiled JavaScript (the image, `npm run build`): only then does it
 * start mapping threads by itself. Run from TypeScript source, the process's loader (tsx) works on
 * Node's module hooks thread, and a worker thread registering the loader again can leave the
 * main thread waiting on that hooks thread for good (nodejs/node#50948, #53182: a fuzz run of
 * the source server hung so). From source, bodies are mapped on the main thread.
 */
export const COMPILED = !import.meta.url.endsWith(".ts");

/** What a thread is started with: the process's decode budget (decode-budget.ts). */
export interface MappingWorkerData {
  readonly budget: SharedArrayBuffer;
  readonly budgetLimit: number;
}

/** A mapping thread of the compiled service: the script beside this file. */
export function startMappingWorker(workerData: MappingWorkerData): Worker {
  return new Worker(new URL("./mapping-worker.js", import.meta.url), { workerData });
}

/**
 * A mapping thread from TypeScript source, through tsx's loader (mapping-worker-source.mjs):
 * for the tests, whose processes register no loader of their own. Never in a process that runs
 * under tsx (see COMPILED).
 */
export function startMappingWorkerFromSource(workerData: MappingWorkerData): Worker {
  return new Worker(new URL("./mapping-worker-source.mjs", import.meta.url), { workerData });
}

interface Pending {
  readonly job: MappingJob;
  readonly onNamed: OnNamed | undefined;
  /** The parts of the export's entries received so far. */
  readonly parts: MappedPart[];
  resolve(reply: MappingReply): void;
  reject(error: unknown): void;
}

type FromThread =
  | { id: number; named: NamedPair[] }
  | { id: number; part: MappedPart }
  | { id: number; reply: MappingReply };

/** One thread and the jobs it has in hand. */
class MappingThread {
  private worker: Worker | undefined;
  readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  /** Whether the thread has answered a job: a later death is a crash, not a failure to start. */
  private answered = false;

  constructor(
    private readonly start: () => Worker,
    /** Told when the thread is gone with jobs in hand: `answered` if it had answered any job. */
    private readonly onLost: (jobs: Pending[], error: Error, answered: boolean) => void,
    /** Told when a thread starts (the log says so at debug level). */
    private readonly onStart: (threadId: number) => void,
  ) {}

  map(job: MappingJob, onNamed: OnNamed | undefined): Promise<MappingReply> {
    clearTimeout(this.idleTimer);
    const worker = this.worker ?? this.spawn();
    const id = ++this.nextId;
    // The thread gets a copy of its own (a Buffer's slice() would be a view of the same memory):
    // the body may be a view of a buffer this thread reuses.
    const data = new Uint8Array(job.data);
    return new Promise<MappingReply>((resolve, reject) => {
      this.pending.set(id, { job, onNamed, parts: [], resolve, reject });
      worker.postMessage({ ...job, data, id }, [data.buffer]);
    });
  }

  async close(): Promise<void> {
    clearTimeout(this.idleTimer);
    const worker = this.worker;
    this.worker = undefined;
    if (worker) await worker.terminate();
  }

  private spawn(): Worker {
    const worker = this.start();
    worker.unref();
    this.worker = worker;
    this.onStart(worker.threadId);
    worker.on("message", (message: FromThread) => {
      const pending = this.pending.get(message.id);
      if ("named" in message) {
        pending?.onNamed?.(message.named);
        return;
      }
      if ("part" in message) {
        pending?.parts.push(message.part);
        return;
      }
      this.answered = true;
      this.pending.delete(message.id);
      const { reply } = message;
      pending?.resolve(
        "mapped" in reply && reply.mapped ? { ...reply, mapped: joinParts(pending.parts, reply.mapped) } : reply,
      );
      if (this.pending.size === 0) this.idleTimer = setTimeout(() => void this.close(), IDLE_MS).unref();
    });
    worker.on("error", (error) => this.lost(worker, error));
    worker.on("exit", (code) => this.lost(worker, new Error(`the OTLP mapping thread exited with code ${code}`)));
    return worker;
  }

  private lost(worker: Worker, error: Error): void {
    if (this.worker === worker) this.worker = undefined;
    const jobs = [...this.pending.values()];
    this.pending.clear();
    if (jobs.length > 0) this.onLost(jobs, error, this.answered);
  }
}

/** The process's mapping threads: each job goes to the one with the fewest in hand. */
export class MappingThreads {
  private readonly threads: MappingThread[];
  /** No thread could be started here: jobs run on the main thread. */
  private inProcess = false;

  /** `start`: how a thread starts; by default the compiled script, and none from source (COMPILED). */
  constructor(
    private readonly logger?: Logger,
    count = MAPPING_THREADS,
    start: ((workerData: MappingWorkerData) => Worker) | undefined = COMPILED ? startMappingWorker : undefined,
    /** Bytes of bodies decoded at once in this process, threads and main thread together. */
    readonly budget = new DecodeBudget(),
  ) {
    this.inProcess = start === undefined;
    const started = (threadId: number) => this.logger?.debug({ threadId }, "an OTLP mapping thread started");
    const workerData: MappingWorkerData = { budget: budget.shared, budgetLimit: budget.limit };
    this.threads = start
      ? Array.from({ length: Math.max(1, count) }, () => new MappingThread(() => start(workerData), this.lost, started))
      : [];
  }

  /** The job's reply; `onNamed` is told the pairs the export names before its mapping ends. */
  map(job: MappingJob, onNamed?: OnNamed): Promise<MappingReply> {
    if (this.inProcess) return mapHttpExport(job, onNamed, undefined, this.budget);
    let thread = this.threads[0]!;
    for (const t of this.threads) if (t.pending.size < thread.pending.size) thread = t;
    return thread.map(job, onNamed);
  }

  /** Stops the threads now (tests; a process that stops serving). */
  async close(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.close()));
  }

  /** A thread is gone: its jobs run here if no thread ever started, else they are answered UNAVAILABLE. */
  private readonly lost = (jobs: Pending[], error: Error, answered: boolean): void => {
    if (!answered && !this.inProcess) {
      this.inProcess = true;
      this.logger?.warn(
        { err: error.message },
        "no OTLP mapping thread could start: OTLP exports are decoded and mapped on the main thread",
      );
    }
    if (this.inProcess) {
      for (const p of jobs) mapHttpExport(p.job, p.onNamed, undefined, this.budget).then(p.resolve, p.reject);
      return;
    }
    this.logger?.error(
      { err: error.message, jobs: jobs.length },
      "an OTLP mapping thread died; the next export starts another",
    );
    for (const p of jobs) p.reject(retryLater(`the OTLP receiver restarted; retry after ${RETRY_AFTER_SECONDS} s`));
  };
}

/** An export turned away for now: UNAVAILABLE (503 over OTLP/HTTP) with Retry-After, which exporters retry. */
export function retryLater(message: string): DomainError {
  return new DomainError("unavailable", message, { "retry-after": String(RETRY_AFTER_SECONDS) });
}
