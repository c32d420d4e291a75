// Demo data: on first start with the embedded database and through `agentplane demo`, every
// module writes realistic data for an organization (ServiceModule.demo), so every endpoint has
// something to show.
import { writeFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Kysely } from "kysely";
import type { Database } from "./database.js";
import { ALL_MODULES } from "./modules.js";
import type { DemoOptions } from "./platform/module.js";
import { createApiKey, createOrganization, createUser, findOrganizationByName } from "./organization/queries.js";

export const DEMO_ORG_NAME = "Demo Organization";
export const DEMO_OWNER_EMAIL = "ada@demo.agentplane.dev";
/**
 * How long ago the demo organization was founded by its owner: before the other demo users
 * joined (from 90 days before the demo period, which is at most 366 days long).
 */
const FOUNDED_DAYS_AGO = 500;

export interface DemoOrganization {
  orgId: string;
  ownerId: string;
  /** Present only when this call created the owner's key (keys are shown once). */
  apiKey?: string;
  created: boolean;
}

/** Finds the demo organization, or creates it with an owner and the owner's API key. */
export async function ensureDemoOrganization(db: Kysely<Database>): Promise<DemoOrganization> {
  const existing = await findOrganizationByName(db, DEMO_ORG_NAME);
  if (existing) {
    const owner = await db
      .selectFrom("users")
      .select("id")
      .where("org_id", "=", existing.id)
      .where("role", "=", "owner")
      .orderBy("created_at")
      .executeTakeFirst();
    return { orgId: existing.id, ownerId: owner?.id ?? "", created: false };
  }
  const founded = new Date(Date.now() - FOUNDED_DAYS_AGO * 86_400_000);
  return db.transaction().execute(async (trx) => {
    const org = await createOrganization(trx, { name: DEMO_ORG_NAME, plan: "team" });
    await trx.updateTable("organizations").set({ created_at: founded }).where("id", "=", org.id).execute();
    const owner = await createUser(trx, {
      orgId: org.id,
      email: DEMO_OWNER_EMAIL,
      role: "owner",
      firstName: "Ada",
      lastName: "Lovelace",
      metadata: { team: "platform" },
      createdAt: founded,
    });
    const { key } = await createApiKey(trx, org.id, owner.id);
    return { orgId: org.id, ownerId: owner.id, apiKey: key, created: true };
  });
}

/** Runs every module's demo writer for the organization, each after those of the modules it depends on. */
export async function writeDemoData(db: Kysely<Database>, orgId: string, options: DemoOptions): Promise<string[]> {
  const wrote: string[] = [];
  for (const module of ALL_MODULES) {
    if (!module.demo) continue;
    await module.demo(db, orgId, options);
    wrote.push(module.name);
  }
  return wrote;
}

/** Keeps the demo owner's key in the data directory (mode 0600) so the README's curl works. */
export async function saveDemoKey(dataDir: string, key: string): Promise<string> {
  await mkdir(dataDir, { recursive: true });
  const path = join(dataDir, "demo-api-key");
  await writeFile(path, `${key}\n`, { mode: 0o600 });
  return path;
}
