// Row IDs: random UUIDs (v4), generated here rather than by Postgres so that a row's ID is known
// before its insert (telemetry events name the session they are about in the same transaction).
import { randomUUID } from "node:crypto";

export const newId = (): string => randomUUID();
