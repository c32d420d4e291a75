// Postgres "restarted" during writes (issue 10). The shared cluster is never restarted: the
// server reaches Postgres through a TCP proxy (support/pg-proxy.ts) that the test cuts — every
// connection dropped, new ones refused — twice while clients post messages, each with an
// Idempotency-Key it reuses when it retries after a failure. Afterwards every message that was
// acknowledged is readable, each logical message is stored exactly once, and no request got a
// 500 or hung. A second test loses exactly the reply to a COMMIT: the write is stored but the
// client sees a failure; its retry with the same key gets the first answer, not a second row.
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../services/database.js";
import { migrations } from "../../services/migrations.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { createTestKv } from "../support/kv.js";
import { api } from "../support/fixtures.js";
import type { KeyValueStore } from "../../services/platform/kv.js";
import { recordFigures } from "./support/figures.js";
import { startServerOn } from "./support/in-process-server.js";
import { sleep } from "./support/load.js";
import { startPgProxy, type PgProxy } from "./support/pg-proxy.js";
import { seedOrg, type Org } from "./support/world.js";

const REAL = Boolean(process.env.TEST_DATABASE_URL);
const CLIENTS = 6;

describe.skipIf(!REAL)(`Postgres cut during writes${REAL ? "" : " (skipped: needs TEST_DATABASE_URL)"}`, () => {
  let proxy: PgProxy;
  let database: TestDatabase<Database>;
  let kv: KeyValueStore;
  let server: Awaited<ReturnType<typeof startServerOn>>;
  let org: Org;

  beforeAll(async () => {
    const upstream = new URL(process.env.TEST_DATABASE_URL!);
    proxy = await startPgProxy(upstream.hostname, Number(upstream.port || 5432));
    const viaProxy = new URL(upstream);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    database = await createTestDatabase<Database>(migrations, { serverUrl: viaProxy.toString() });
    kv = await createTestKv();
    server = await startServerOn(database, kv);
    org = await seedOrg(database.db, server.restUrl, server.internalGrpcUrl, "P", { demo: false });
  }, 120_000);
  afterAll(async () => {
    proxy?.restore();
    await server?.stop();
    await kv?.close();
    await database?.drop();
    await proxy?.close();
  });

  it("every acknowledged POST is readable afterwards and none is duplicated by the client's retries", async () => {
    const session = org.sessions.owner;
    const key = org.members.owner.key;
    const attempts: { status: number; ms: number }[] = [];
    const acked = new Map<string, { messageId: string; tries: number }>();
    let running = true;

    // A client: one logical message after another; a failed attempt is retried with the same
    // Idempotency-Key until it is acknowledged.
    const client = async (c: number) => {
      for (let n = 0; running; n++) {
        const text = `pg-fault c${c} n${n} ${randomUUID()}`;
        const idempotencyKey = randomUUID();
        for (let tries = 1; ; tries++) {
          const started = performance.now();
          let status = 0;
          let messageId: string | undefined;
          try {
            const res = await api(server.restUrl, key, `/api/v0/sessions/${session}/messages`, {
              method: "POST",
              body: { text },
              headers: { "idempotency-key": idempotencyKey },
            });
            status = res.status;
            messageId = res.json?.messageId;
          } catch {
            status = 0;
          }
          attempts.push({ status, ms: performance.now() - started });
          if (status === 200 && messageId) {
            acked.set(text, { messageId, tries });
            break;
          }
          await sleep(100);
        }
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));

    await sleep(1_500);
    proxy.cut();
    await sleep(2_500);
    proxy.restore();
    await sleep(1_500);
    proxy.cut();
    await sleep(1_000);
    proxy.restore();
    await sleep(2_000);
    running = false;
    await Promise.all(clients);

    const statuses = new Set(attempts.map((a) => a.status));
    const failed = attempts.filter((a) => a.status !== 200);
    expect(failed.length, "the cuts were felt").toBeGreaterThan(0);
    // Failures are 503/504 answers with the error body, not 500s or dropped connections.
    expect([...statuses].filter((s) => s !== 200 && s !== 503 && s !== 504)).toEqual([]);
    expect(Math.max(...attempts.map((a) => a.ms))).toBeLessThan(10_000);

    const rows = await database.db
      .selectFrom("messages")
      .select(["id", "content"])
      .where("session_id", "=", session)
      .where("role", "=", "user")
      .execute();
    const byText = new Map<string, string[]>();
    for (const r of rows) {
      const text = JSON.stringify(r.content);
      for (const t of acked.keys()) if (text.includes(t)) byText.set(t, [...(byText.get(t) ?? []), r.id]);
    }
    const lost = [...acked].filter(([t, a]) => !(byText.get(t) ?? []).includes(a.messageId));
    const duplicated = [...byText].filter(([, ids]) => ids.length > 1);
    expect(lost).toEqual([]);
    expect(duplicated).toEqual([]);
    // Readable through the API too.
    for (const [, a] of [...acked].slice(-5)) {
      expect((await api(server.restUrl, key, `/api/v0/sessions/${session}/messages/${a.messageId}`)).status).toBe(200);
    }
    const retried = [...acked.values()].filter((a) => a.tries > 1).length;
    expect(retried).toBeGreaterThan(0);
    recordFigures("fault postgres cut", {
      faultsInjected: 2,
      attempts: attempts.length,
      failedAttempts: failed.length,
      statuses: Object.fromEntries([...statuses].map((s) => [s, attempts.filter((a) => a.status === s).length])),
      acknowledged: acked.size,
      retriedMessages: retried,
      lost: lost.length,
      duplicated: duplicated.length,
      slowestAttemptMs: Math.round(Math.max(...attempts.map((a) => a.ms))),
    });
  }, 90_000);

  it("a write whose COMMIT reply was lost is answered once: the retry with its Idempotency-Key returns the stored message", async () => {
    const session = org.sessions.member;
    const key = org.members.member.key;
    const text = `lost-commit-reply ${randomUUID()}`;
    const idempotencyKey = randomUUID();
    const post = () =>
      api(server.restUrl, key, `/api/v0/sessions/${session}/messages`, {
        method: "POST",
        body: { text },
        headers: { "idempotency-key": idempotencyKey },
      });

    const lost = proxy.loseNextCommitReply();
    const first = await post();
    await lost;
    // The client cannot tell whether its message was stored...
    expect(first.status).toBe(503);
    const stored = await database.db
      .selectFrom("messages")
      .select("id")
      .where("session_id", "=", session)
      .where(sql<boolean>`content::text like ${`%${text}%`}`)
      .execute();
    // ...but it was: the commit reached Postgres.
    expect(stored).toHaveLength(1);
    const retry = await post();
    expect(retry.status).toBe(200);
    expect(retry.json.messageId).toBe(stored[0]!.id);
    const again = await database.db
      .selectFrom("messages")
      .select("id")
      .where("session_id", "=", session)
      .where(sql<boolean>`content::text like ${`%${text}%`}`)
      .execute();
    expect(again).toHaveLength(1);
    // Without the key, the same retry would have stored the message twice (what the key is for).
    recordFigures("fault postgres lost commit reply", {
      faultsInjected: 1,
      firstAttempt: first.status,
      retry: retry.status,
      rowsStored: again.length,
    });
  }, 30_000);
});
