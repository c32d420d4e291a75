// The isolation matrix's callers and rows (isolation.test.ts), and the rows of the computer
// lifecycle, credit-limit and webhook endpoints (issue 20). What a row deletes or resets is made
// for it alone, one per caller, before any request: after each request the database shows
// whether it was touched, which must be exactly when the design lets the caller.
import { randomUUID } from "node:crypto";
import { startProvisioningWorker } from "../../../services/computers/provisioning-worker.js";
import { createUser } from "../../../services/organization/queries.js";
import type { Role } from "../../../services/platform/context.js";
import { api } from "../../support/fixtures.js";
import type { TestServer } from "../../support/server.js";
import { WEBHOOK_URL } from "./endpoints.js";
import type { Org } from "./world.js";

export type Caller = Role | "otherOwner" | "revokedKey" | "expiredJwt" | "wrongJwt" | "ownerJwt";
export const CALLERS: Caller[] = [
  "owner",
  "manager",
  "member",
  "guest",
  "otherOwner",
  "revokedKey",
  "expiredJwt",
  "wrongJwt",
  "ownerJwt",
];

/** What a row of the matrix addresses in org A: the org's (owner's) session, or the caller's own. */
export type Target = "org" | "own";

export type Answer = Awaited<ReturnType<typeof api>>;

export interface Row {
  endpoint: string;
  target: Target;
  request(caller: Caller): { method: string; path: string; body?: unknown };
  expect(caller: Caller): number;
  /** What the request did to the stored data, when it writes: a problem, or undefined. */
  verify?(caller: Caller, res: Answer): Promise<string | undefined>;
  /** Its 2xx is an endless event stream: read to the first chunk, then left (`streamed`). */
  stream?: true;
}

/** Rows of the computer list, delete and retry, the credit-limit reads and removal, and webhooks. */
export async function lifecycleRows(server: TestServer, a: Org, denied: (c: Caller) => boolean): Promise<Row[]> {
  const db = server.platform.db;
  const owner = async (path: string, init: Parameters<typeof api>[3], want: number) => {
    const res = await api(server.restUrl, a.members.owner.key, path, init);
    if (res.status !== want) throw new Error(`${init?.method ?? "GET"} ${path}: ${res.status} ${res.text}`);
    return res.json;
  };
  const computer = async (provider: "byom" | "e2b") =>
    (
      await owner(
        "/api/v0/computers",
        { method: "POST", body: { name: `${a.marker}-${randomUUID()}`, remoteUser: "dev", provider } },
        201,
      )
    ).id as string;
  const perCaller = async (make: (c: Caller) => Promise<string>) => {
    const made = new Map<Caller, string>();
    for (const c of CALLERS) made.set(c, await make(c));
    return (c: Caller) => made.get(c)!;
  };

  const toDelete = await perCaller(() => computer("byom"));
  // The real provisioning worker, without E2B configured, fails each e2b computer's first step;
  // it stops once all have failed, so an accepted retry leaves its computer provisioning.
  const toRetry = await perCaller(() => computer("e2b"));
  const provisioner = startProvisioningWorker({
    db,
    e2b: undefined,
    logger: server.platform.logger,
    pollIntervalMs: 20,
  });
  try {
    const ids = CALLERS.map(toRetry);
    for (let i = 0; ; i++) {
      const failed = await db
        .selectFrom("computers")
        .select("id")
        .where("id", "in", ids)
        .where("status", "=", "error")
        .execute();
      if (failed.length === ids.length) break;
      if (i > 500) throw new Error(`${failed.length} of ${ids.length} computers failed provisioning`);
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await provisioner.stop();
  }
  // A computer a pending session waits on: deleting it is a 409 for whoever may delete it.
  const busy = await computer("byom");
  await owner(
    "/api/v0/sessions",
    { method: "POST", body: { title: `${a.marker} busy`, computerId: busy, text: "wait" } },
    201,
  );
  // A user with a credit limit per caller, whose limit the caller's request may remove.
  const limited = await perCaller(async (c) => {
    const email = `limited-${c.toLowerCase()}.${a.marker.toLowerCase()}@example.test`;
    await createUser(db, { orgId: a.orgId, email, role: "member", firstName: a.marker, lastName: c });
    return email;
  });
  const set = await owner(
    "/api/v0/organization/usage/limits/users",
    { method: "PUT", body: { users: CALLERS.map((c) => ({ email: limited(c), limit: 250 })) } },
    200,
  );
  if (set.updated.length !== CALLERS.length) throw new Error(`setting limits: ${JSON.stringify(set)}`);
  const webhook = (description: string) =>
    owner(
      "/api/v0/webhooks",
      { method: "POST", body: { url: WEBHOOK_URL, events: ["message.created"], description } },
      201,
    );
  const kept = (await webhook(`${a.marker} kept`)).id as string;
  const webhookToDelete = await perCaller(async (c) => (await webhook(`${a.marker} ${c}`)).id);

  const computerRow = (id: string) =>
    db.selectFrom("computers").select(["status", "org_id"]).where("id", "=", id).executeTakeFirst();
  const limitOf = async (email: string) =>
    db
      .selectFrom("user_credit_limits as l")
      .innerJoin("users as u", "u.id", "l.user_id")
      .select("l.org_id")
      .where("u.email", "=", email)
      .executeTakeFirst();
  const webhookRow = (id: string) =>
    db.selectFrom("webhook_endpoints").select("org_id").where("id", "=", id).executeTakeFirst();

  // Computers: writers are owners, managers and members; another organization's computer is
  // unknown to its owner (404); a guest is refused before the computer is looked up.
  const writer = (c: Caller) => !denied(c) && c !== "guest" && c !== "otherOwner";
  const writerRefusal = (c: Caller) => (denied(c) ? 401 : c === "guest" ? 403 : 404);
  // Credit limits and webhooks: owners and managers only.
  const manager = (c: Caller) => c === "owner" || c === "manager" || c === "ownerJwt";
  const managerRefusal = (c: Caller) => (denied(c) ? 401 : c === "member" || c === "guest" ? 403 : 404);
  /** The other organization's owner reads its own organization: a 200 with nothing of A. */
  const managerRead = (c: Caller) => (manager(c) || c === "otherOwner" ? 200 : managerRefusal(c));

  return [
    {
      endpoint: "GET /api/v0/computers",
      target: "org",
      request: () => ({ method: "GET", path: "/api/v0/computers?limit=100" }),
      expect: (c) => (denied(c) ? 401 : 200),
      async verify(c, res) {
        if (res.status !== 200 || c === "otherOwner") return undefined;
        return res.json.computers.some((x: { id: string }) => x.id === a.computer.id)
          ? undefined
          : "the organization's computer is not listed";
      },
    },
    {
      endpoint: "DELETE /api/v0/computers/{computerId}",
      target: "org",
      request: (c) => ({ method: "DELETE", path: `/api/v0/computers/${toDelete(c)}` }),
      expect: (c) => (writer(c) ? 204 : writerRefusal(c)),
      async verify(c) {
        const row = await computerRow(toDelete(c));
        return writer(c) === !row ? undefined : `the computer is ${row ? "stored" : "gone"}`;
      },
    },
    {
      endpoint: "DELETE /api/v0/computers/{computerId}",
      target: "org",
      request: () => ({ method: "DELETE", path: `/api/v0/computers/${busy}` }),
      expect: (c) => (writer(c) ? 409 : writerRefusal(c)),
      async verify() {
        return (await computerRow(busy)) ? undefined : "the busy computer is gone";
      },
    },
    {
      endpoint: "POST /api/v0/computers/{computerId}/provisioning/retry",
      target: "org",
      request: (c) => ({ method: "POST", path: `/api/v0/computers/${toRetry(c)}/provisioning/retry`, body: {} }),
      expect: (c) => (writer(c) ? 200 : writerRefusal(c)),
      async verify(c) {
        const row = await computerRow(toRetry(c));
        const want = writer(c) ? "provisioning" : "error";
        return row?.status === want ? undefined : `the computer is ${row?.status ?? "gone"}, not ${want}`;
      },
    },
    {
      endpoint: "GET /api/v0/organization/usage/limits/users",
      target: "org",
      request: () => ({ method: "GET", path: "/api/v0/organization/usage/limits/users?limit=100" }),
      expect: managerRead,
    },
    {
      endpoint: "DELETE /api/v0/organization/usage/limits/users/{email}",
      target: "org",
      request: (c) => ({
        method: "DELETE",
        path: `/api/v0/organization/usage/limits/users/${encodeURIComponent(limited(c))}`,
      }),
      // A's user is no user of another organization: its owner gets the 404 of an unknown email.
      expect: (c) => (manager(c) ? 204 : managerRefusal(c)),
      async verify(c) {
        const row = await limitOf(limited(c));
        if (manager(c)) return row ? "removed, yet the limit is stored" : undefined;
        return row?.org_id === a.orgId ? undefined : "refused, yet the limit is gone";
      },
    },
    {
      endpoint: "GET /api/v0/organization/usage/limits/me",
      target: "own",
      request: () => ({ method: "GET", path: "/api/v0/organization/usage/limits/me" }),
      expect: (c) => (denied(c) ? 401 : 200),
      async verify(c, res) {
        if (res.status !== 200 || c === "otherOwner") return undefined;
        const me = a.members[c === "ownerJwt" ? "owner" : (c as Role)];
        return res.json.email === me.email ? undefined : `the limit of ${res.json.email}, not ${me.email}`;
      },
    },
    {
      endpoint: "POST /api/v0/webhooks",
      target: "org",
      request: () => ({
        method: "POST",
        path: "/api/v0/webhooks",
        body: { url: WEBHOOK_URL, events: ["session.status_changed"], description: "isolation" },
      }),
      // Another organization's owner adds one to its own organization.
      expect: (c) => (manager(c) || c === "otherOwner" ? 201 : managerRefusal(c)),
      async verify(c, res) {
        if (res.status !== 201) return undefined;
        const row = await webhookRow(res.json.id);
        const inA = row?.org_id === a.orgId;
        const right = c === "otherOwner" ? row !== undefined && !inA : inA;
        return right ? undefined : `created ${JSON.stringify(row)}, not in the caller's organization`;
      },
    },
    {
      endpoint: "GET /api/v0/webhooks",
      target: "org",
      request: () => ({ method: "GET", path: "/api/v0/webhooks?limit=100" }),
      expect: managerRead,
      async verify(c, res) {
        if (res.status !== 200 || c === "otherOwner") return undefined;
        return res.json.webhooks.some((w: { id: string }) => w.id === kept)
          ? undefined
          : "the kept webhook is not listed";
      },
    },
    {
      endpoint: "DELETE /api/v0/webhooks/{webhookId}",
      target: "org",
      request: (c) => ({ method: "DELETE", path: `/api/v0/webhooks/${webhookToDelete(c)}` }),
      expect: (c) => (manager(c) ? 204 : managerRefusal(c)),
      async verify(c) {
        const row = await webhookRow(webhookToDelete(c));
        return manager(c) === !row ? undefined : `the webhook is ${row ? "stored" : "gone"}`;
      },
    },
    {
      endpoint: "GET /api/v0/webhooks/{webhookId}/deliveries",
      target: "org",
      request: () => ({ method: "GET", path: `/api/v0/webhooks/${kept}/deliveries?limit=100` }),
      expect: (c) => (manager(c) ? 200 : managerRefusal(c)),
    },
  ];
}
