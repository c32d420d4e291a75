// Demo users of every role, added to an organization unless their email is already there. They
// joined over the months before the demo period (the last few during it), and each has signed
// in: shortly before their last session of the demo story, or some time after joining.
import { sql, type Kysely } from "kysely";
import type { Database } from "../database.js";
import { demoDays, demoFraction, demoPeriodStart, demoStory, lastSessionStarts } from "../demo-story.js";
import type { Role } from "../platform/context.js";
import type { DemoOptions } from "../platform/module.js";
import { createUser, findUsersByEmail } from "./queries.js";

const FIRST = [
  "Grace",
  "Linus",
  "Margaret",
  "Ken",
  "Barbara",
  "Dennis",
  "Frances",
  "Edsger",
  "Radia",
  "Donald",
  "Katherine",
  "John",
];
const LAST = [
  "Hopper",
  "Torvalds",
  "Hamilton",
  "Thompson",
  "Liskov",
  "Ritchie",
  "Allen",
  "Dijkstra",
  "Perlman",
  "Knuth",
  "Johnson",
  "Backus",
];
const ROLE_CYCLE: Role[] = ["manager", "member", "member", "member", "guest"];

const DEMO_EMAIL_DOMAIN = "@demo.agentplane.dev";
const DAY_MS = 86_400_000;
/** Users per sign-in update statement. */
const SIGN_IN_BATCH = 1_000;
/** How long before the demo period the first demo user joined. */
const JOINED_BEFORE_DAYS = 90;

/**
 * When the i-th of n demo users joined: spread from JOINED_BEFORE_DAYS before the period to
 * half-way through it, in order, during working hours.
 */
function joinedAt(orgId: string, i: number, n: number, periodStart: number, periodDays: number): Date {
  const spanDays = JOINED_BEFORE_DAYS + periodDays / 2;
  const day = Math.floor(periodStart / DAY_MS - JOINED_BEFORE_DAYS + (spanDays * i) / Math.max(1, n));
  const hours = 8 + demoFraction("demo-joined", orgId, String(i)) * 9;
  return new Date(day * DAY_MS + hours * 3_600_000);
}

export async function writeOrganizationDemo(
  db: Kysely<Database>,
  orgId: string,
  options: DemoOptions,
  nowMs = Date.now(),
): Promise<void> {
  const wanted = Array.from({ length: Math.max(0, options.users) }, (_, i) => {
    const first = FIRST[i % FIRST.length]!;
    const last = LAST[(i * 7) % LAST.length]!;
    const round = Math.floor(i / FIRST.length);
    return {
      email: `${first}.${last}${round ? round : ""}${DEMO_EMAIL_DOMAIN}`.toLowerCase(),
      firstName: first,
      lastName: last,
      role: ROLE_CYCLE[i % ROLE_CYCLE.length]!,
      team: i % 3 === 0 ? "platform" : "product",
    };
  });
  const existing = new Set(
    (
      await findUsersByEmail(
        db,
        orgId,
        wanted.map((u) => u.email),
      )
    ).map((u) => u.email.toLowerCase()),
  );
  const days = demoDays(options, nowMs);
  const periodStart = demoPeriodStart(options, nowMs);
  for (const [i, u] of wanted.entries()) {
    if (existing.has(u.email)) continue;
    await createUser(db, {
      orgId,
      email: u.email,
      role: u.role,
      firstName: u.firstName,
      lastName: u.lastName,
      metadata: { team: u.team },
      createdAt: joinedAt(orgId, i, wanted.length, periodStart, days.length),
    });
  }
  await recordSignIns(db, orgId, options, nowMs);
}

/**
 * Gives the demo's users (those who work in the story, and the demo's own) their latest
 * sign-in: minutes before their last session, or, without one, some time after they joined.
 * Users who signed in for real keep theirs.
 */
async function recordSignIns(db: Kysely<Database>, orgId: string, options: DemoOptions, nowMs: number) {
  const lastStarts = lastSessionStarts(await demoStory(db, orgId, options, nowMs));
  const users = await db
    .selectFrom("users")
    .select(["id", "email", "created_at"])
    .where("org_id", "=", orgId)
    .where("last_sign_in_at", "is", null)
    .execute();
  const signIns: { id: string; at: Date }[] = [];
  for (const user of users) {
    const jitter = demoFraction("demo-sign-in", user.id);
    const lastStart = lastStarts.get(user.id);
    if (lastStart !== undefined) signIns.push({ id: user.id, at: new Date(lastStart - (2 + jitter * 25) * 60_000) });
    else if (user.email.endsWith(DEMO_EMAIL_DOMAIN)) {
      const joined = user.created_at.getTime();
      signIns.push({ id: user.id, at: new Date(joined + (0.2 + 0.8 * jitter) * (nowMs - joined)) });
    }
  }
  for (let i = 0; i < signIns.length; i += SIGN_IN_BATCH) {
    const rows = signIns.slice(i, i + SIGN_IN_BATCH).map((s) => sql`(${s.id}, ${s.at}::timestamptz)`);
    await sql`update users set last_sign_in_at = v.at from (values ${sql.join(rows)}) as v(id, at)
      where users.id = v.id and users.org_id = ${orgId}`.execute(db);
  }
}
