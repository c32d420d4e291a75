// A mapping thread's entry when the service runs as TypeScript source (tsx, the tests): tsx's
// loader registered in the thread, as bin/agentplane.js registers it in the process, then the
// thread's script. The compiled service starts mapping-worker.js directly (mapping-pool.ts).
import { register } from "tsx/esm/api";

register();
await import("./mapping-worker.ts");
