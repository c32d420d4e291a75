// What SessionService is built from, for tests that call it without a server: the database,
// in-memory cursors, telemetry into the database, and event-stream wake-ups that poll (no LISTEN
// connection), never draining.
import type { Kysely } from "kysely";
import type { Database } from "../../services/database.js";
import { createTelemetrySink } from "../../services/analytics/ingest/sink.js";
import { CursorStore } from "../../services/platform/cursors.js";
import { MemoryKeyValueStore } from "../../services/platform/kv-memory.js";
import type { SessionsDeps } from "../../services/sessions/handlers.js";
import { createSessionWakeups } from "../../services/sessions/event-wakeups.js";
import { testLogger } from "./database.js";

export function sessionServiceDeps(db: Kysely<Database>): SessionsDeps {
  return {
    db,
    cursors: new CursorStore(new MemoryKeyValueStore()),
    telemetry: createTelemetrySink(db),
    wakeups: createSessionWakeups({ url: undefined, logger: testLogger() }),
    draining: new AbortController().signal,
  };
}
