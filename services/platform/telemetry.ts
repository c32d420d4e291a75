// Where the platform's own activity (session creation, stored messages, model usage) goes as
// telemetry events (docs/telemetry.md), so the next day's analytics reflect API use. The analytics
// area implements it over its raw-event tables; any module may record through it.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { TelemetryEventSchema } from "../../gen/agentplane/analytics/v1/analytics_pb.js";
import type { Executor } from "../database.js";

export type TelemetryEventInit = MessageInitShape<typeof TelemetryEventSchema>;

export interface TelemetrySink {
  /**
   * Stores events, inside the caller's transaction when one is given (so an event exists exactly
   * when the write it describes does). Events the platform emits are valid by construction; an
   * invalid one is a bug and throws.
   */
  record(events: readonly TelemetryEventInit[], trx?: Executor): Promise<void>;
}
