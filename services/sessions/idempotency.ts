// Idempotency-Key for POST /sessions and POST /sessions/{id}/messages, stored in Postgres per
// organization and credential so it survives restarts and is atomic with the write it guards.
//
// The key row is inserted inside the transaction of the write it guards. A concurrent request with the same
// key blocks on the primary key until that transaction ends: if it committed, the second request
// finds the row (same body → the first result; other body → 409); if it rolled back, the second
// request proceeds as the first. Keys expire after IDEMPOTENCY_KEY_TTL_MS; an expired key is
// taken over by the next request that uses it, and a worker deletes expired keys every hour.
import { createHash } from "node:crypto";
import type { HandlerContext } from "@connectrpc/connect";
import type { Executor } from "../database.js";
import { invalidArgument } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import type { Worker } from "../platform/module.js";
import { pruneIdempotencyKeys } from "./idempotency-queries.js";

const KEY = /^[\x21-\x7e]{1,255}$/;

/** The header's value, or undefined when absent; a 400 naming the header when malformed. */
export function parseIdempotencyKey(raw: string | null | undefined): string | undefined {
  if (raw === null || raw === undefined) return undefined;
  if (!KEY.test(raw)) throw invalidArgument("Idempotency-Key", "must be 1 to 255 visible ASCII characters");
  return raw;
}

/** The request's Idempotency-Key header, checked (parseIdempotencyKey). */
export function idempotencyKeyOf(ctx: HandlerContext): string | undefined {
  return parseIdempotencyKey(ctx.requestHeader.get("idempotency-key"));
}

/** A stable digest of what the request asks for: JSON with sorted keys, hashed. */
export function requestHash(request: unknown): string {
  const canonical = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canonical);
    if (v !== null && typeof v === "object") {
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>)
          .filter(([, x]) => x !== undefined)
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([k, x]) => [k, canonical(x)]),
      );
    }
    return v;
  };
  return createHash("sha256")
    .update(JSON.stringify(canonical(request)))
    .digest("hex");
}

export const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

// An expired key that is still present is harmless (the next request with it takes it over), so
// a missed run costs only disk space.
export function startIdempotencyKeyPruner(db: Executor, logger: Logger, intervalMs = PRUNE_INTERVAL_MS): Worker {
  const log = logger.child({ component: "idempotency-pruner" });
  let running: Promise<void> | undefined;
  const run = () => {
    running ??= pruneIdempotencyKeys(db)
      .then((deleted) => {
        if (deleted > 0) log.info({ deleted }, "pruned expired idempotency keys");
      })
      .catch((err: unknown) => log.warn({ err }, "pruning idempotency keys failed; retrying next hour"))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(run, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
