// A mapping thread's entry from TypeScript source, for the tests (mapping-pool.ts,
// startMappingWorkerFromSource): tsx's loader registered in the thread, then the thread's script.
// Only in a process that registers no loader of its own: a service run under tsx maps on its main
// thread instead (mapping-pool.ts, COMPILED). The compiled service starts mapping-worker.js.
import { register } from "tsx/esm/api";

register();
await import("./mapping-worker.ts");
