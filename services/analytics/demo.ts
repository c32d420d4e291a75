// Demo analytics for an organization: its users (the organization module's demo users, plus
// extra ones when more are asked for) get realistic telemetry for the last `days` days, which is
// then rolled up, so every analytics endpoint shows data on the first start.
import type { Kysely } from "kysely";
import type { Database } from "../database.js";
import type { DemoOptions } from "../platform/module.js";
import { writeOrganizationDemo } from "../organization/demo.js";
import { createUser } from "../organization/queries.js";
import { addDays, dayOf, eachDay, EARLIEST_DATE } from "./dates.js";
import { generateTelemetry } from "./generate.js";
import { ingestEvents } from "./ingest/ingest.js";
import { analyzeAggregates, rollupOrganization } from "./rollup/rollup.js";

const BATCH = 5_000;

async function demoUsers(db: Kysely<Database>, orgId: string, wanted: number) {
  // The organization demo is idempotent: it adds the same users only once.
  await writeOrganizationDemo(db, orgId, { days: 1, users: wanted });
  const users = await db
    .selectFrom("users")
    .select(["id", "email"])
    .where("org_id", "=", orgId)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  for (let n = users.length; n < wanted + 1; n++) {
    const user = await createUser(db, {
      orgId,
      email: `developer${n}@demo.agentplane.dev`,
      role: "member",
      firstName: "Developer",
      lastName: String(n),
    });
    users.push({ id: user.id, email: user.email });
  }
  return users;
}

export async function writeAnalyticsDemo(
  db: Kysely<Database>,
  orgId: string,
  options: DemoOptions,
  nowMs = Date.now(),
): Promise<{ events: number; days: number }> {
  const users = await demoUsers(db, orgId, Math.max(1, options.users));
  const yesterday = addDays(dayOf(nowMs), -1);
  const first = addDays(yesterday, -(Math.max(1, options.days) - 1));
  // biome-ignore lint/complexity/useMathMinMax: the values are "YYYY-MM-DD" strings compared as text; Math.max would turn them into NaN
  const days = eachDay(first < EARLIEST_DATE ? EARLIEST_DATE : first, yesterday);
  if (days.length === 0) return { events: 0, days: 0 };
  let batch: Parameters<typeof ingestEvents>[1][number][] = [];
  let stored = 0;
  for (const userDay of generateTelemetry({ orgId, users, days, idPrefix: "demo", codeAndCost: true })) {
    batch.push(...userDay);
    if (batch.length >= BATCH) {
      stored += (await ingestEvents(db, batch, nowMs)).accepted;
      batch = [];
    }
  }
  if (batch.length > 0) stored += (await ingestEvents(db, batch, nowMs)).accepted;
  await rollupOrganization(db, orgId, days, { through: yesterday });
  await analyzeAggregates(db);
  return { events: stored, days: days.length };
}
