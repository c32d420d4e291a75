// Demo analytics for an organization: the telemetry of the demo story (demo-story.ts) — its
// users' sessions over the last `days` days, the very sessions the sessions demo stores, and
// today's waiting session — ingested and rolled up, so every analytics endpoint shows data on the
// first start. The organization's demo users are added first (idempotently), when more are asked for.
import type { Kysely } from "kysely";
import type { Database } from "../database.js";
import { demoStory } from "../demo-story.js";
import type { DemoOptions } from "../platform/module.js";
import { writeOrganizationDemo } from "../organization/demo.js";
import { ingestEvents } from "./ingest/ingest.js";
import { analyzeAggregates, rollupOrganization } from "./rollup/rollup.js";

const BATCH = 5_000;

export async function writeAnalyticsDemo(
  db: Kysely<Database>,
  orgId: string,
  options: DemoOptions,
  nowMs = Date.now(),
): Promise<{ events: number; days: number }> {
  // The organization demo is idempotent: it adds the same users only once.
  await writeOrganizationDemo(db, orgId, options, nowMs);
  const story = await demoStory(db, orgId, options, nowMs);
  const { days } = story;
  if (days.length === 0) return { events: 0, days: 0 };
  let batch: Parameters<typeof ingestEvents>[1][number][] = [...(story.pending?.events ?? [])];
  let stored = 0;
  for (const userDay of story.telemetry()) {
    batch.push(...userDay);
    if (batch.length >= BATCH) {
      stored += (await ingestEvents(db, batch, nowMs)).accepted;
      batch = [];
    }
  }
  if (batch.length > 0) stored += (await ingestEvents(db, batch, nowMs)).accepted;
  const yesterday = days[days.length - 1]!;
  await rollupOrganization(db, orgId, days, { through: yesterday });
  await analyzeAggregates(db);
  return { events: stored, days: days.length };
}
