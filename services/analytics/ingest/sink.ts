// The platform's TelemetrySink (services/platform/telemetry.ts) over the analytics raw-event
// tables: other modules record what they did (session created, message stored, model used) and
// it shows up in the next day's analytics. With a transaction the events commit or roll back
// with the write they describe.
import { Transaction, type Kysely } from "kysely";
import type { Database, Executor } from "../../database.js";
import type { TelemetryEventInit, TelemetrySink } from "../../platform/telemetry.js";
import { dayOf } from "../dates.js";
import { checkEvents } from "./ingest.js";
import { createMissingPartitions, ensurePartitions, monthsOf } from "./partitions.js";
import { storeEvents } from "./store.js";

export function createTelemetrySink(db: Kysely<Database>): TelemetrySink {
  return {
    async record(events: readonly TelemetryEventInit[], trx?: Executor): Promise<void> {
      if (events.length === 0) return;
      const nowMs = Date.now();
      const executor = trx ?? db;
      const { rows, rejected } = await checkEvents(executor, events, nowMs);
      // The platform's own events are valid by construction: a rejection is a bug in the caller.
      if (rejected.length > 0) {
        const first = rejected[0]!;
        throw new Error(
          `invalid telemetry event #${first.index}: ${first.reason}` +
            (rejected.length > 1 ? ` (and ${rejected.length - 1} more)` : ""),
        );
      }
      const months = monthsOf(rows);
      const today = dayOf(nowMs);
      // The platform's own events come a few at a time: they go as arrays (store.ts), not COPY.
      if (trx instanceof Transaction) {
        // Inside the caller's transaction: a partition it creates commits (or not) with it.
        await createMissingPartitions(trx, months);
        await storeEvents(trx, rows, today);
      } else if (trx !== undefined) {
        throw new Error("telemetry events are recorded inside a transaction or on their own, not on another executor");
      } else {
        await ensurePartitions(db, months);
        await db.transaction().execute((t) => storeEvents(t, rows, today));
      }
    },
  };
}
