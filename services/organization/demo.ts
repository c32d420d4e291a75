// Demo users of every role, added to an organization unless their email is already there.
import type { Kysely } from "kysely";
import type { Database } from "../database.js";
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

export async function writeOrganizationDemo(db: Kysely<Database>, orgId: string, options: DemoOptions): Promise<void> {
  const wanted = Array.from({ length: Math.max(0, options.users) }, (_, i) => {
    const first = FIRST[i % FIRST.length]!;
    const last = LAST[(i * 7) % LAST.length]!;
    const round = Math.floor(i / FIRST.length);
    return {
      email: `${first}.${last}${round ? round : ""}@demo.agentplane.dev`.toLowerCase(),
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
  const start = Date.now() - wanted.length * 60_000;
  for (const [i, u] of wanted.entries()) {
    if (existing.has(u.email)) continue;
    await createUser(db, {
      orgId,
      email: u.email,
      role: u.role,
      firstName: u.firstName,
      lastName: u.lastName,
      metadata: { team: u.team },
      createdAt: new Date(start + i * 60_000),
    });
  }
}
