// Opaque page tokens for the v0 list endpoints (docs/architecture.md, "Paging"). A token is random;
// what it stands for (the keyset position) lives in Redis with a TTL, together with the scope it
// was issued for: organization, credential, endpoint and filters. Any mismatch, expiry or forgery
// is the same 400, so a token reveals nothing and works for nobody else.
import { randomBytes } from "node:crypto";
import { invalidArgument, unavailable } from "./errors.js";
import type { Principal } from "./context.js";
import type { KeyValueStore } from "./kv.js";

export const CURSOR_TTL_MS = 60 * 60 * 1000;
const TOKEN = /^[A-Za-z0-9_-]{32}$/;

export interface CursorScope {
  /** The endpoint, e.g. "organization.users". */
  readonly list: string;
  /** Query filters that shape the result; a token is valid only with the same ones. */
  readonly filters?: Readonly<Record<string, string | undefined>>;
}

function scopeKey(principal: Principal, scope: CursorScope): string {
  const filters = Object.entries(scope.filters ?? {})
    .filter(([, v]) => v !== undefined && v !== "")
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return JSON.stringify([principal.orgId, principal.credentialId, scope.list, filters]);
}

export class CursorStore {
  constructor(
    private readonly kv: KeyValueStore,
    private readonly ttlMs = CURSOR_TTL_MS,
  ) {}

  async issue<P>(principal: Principal, scope: CursorScope, position: P): Promise<string> {
    const token = randomBytes(24).toString("base64url");
    try {
      await this.kv.set(`cur:${token}`, JSON.stringify({ s: scopeKey(principal, scope), p: position }), this.ttlMs);
    } catch {
      throw unavailable("cursor store unavailable, retry shortly");
    }
    return token;
  }

  /** The position a token stands for; a 400 naming `cursor` when it is not valid here. */
  async read<P>(principal: Principal, scope: CursorScope, token: string): Promise<P> {
    const bad = invalidArgument("cursor", "is invalid, expired, or was issued for another query or credential");
    if (!TOKEN.test(token)) throw bad;
    let raw: string | null;
    try {
      raw = await this.kv.get(`cur:${token}`);
    } catch {
      throw unavailable("cursor store unavailable, retry shortly");
    }
    if (raw === null) throw bad;
    const stored = JSON.parse(raw) as { s: string; p: P };
    if (stored.s !== scopeKey(principal, scope)) throw bad;
    return stored.p;
  }
}

/** The page size of every list: 20 when absent, at most 100 (spec: v0 lists, /users, readiness reports). */
export const PAGE_LIMIT = { default: 20, max: 100 } as const;

const INTEGER_TEXT = /^-?\d+$/;

/**
 * A list's page size, with one set of texts for every list: the v0 lists' `limit` (a query string)
 * and the int32 `limit` of analytics /users and readiness reports. Absent or "" is the default;
 * anything but an integer from 1 to the maximum is a 400 naming the field (never clamped).
 */
export function parsePageLimit(raw: string | number | undefined, field = "limit"): number {
  if (raw === undefined || raw === "") return PAGE_LIMIT.default;
  const integerText = typeof raw === "string" && INTEGER_TEXT.test(raw);
  const n = typeof raw === "number" ? raw : integerText ? Number(raw) : NaN;
  if (Number.isInteger(n) && n >= 1 && n <= PAGE_LIMIT.max) return n;
  // Numbers and integer texts print as they came; other text is quoted (and shortened).
  const got = typeof raw === "number" ? String(raw) : integerText ? raw.slice(0, 40) : JSON.stringify(raw.slice(0, 40));
  throw invalidArgument(field, `must be an integer from 1 to ${PAGE_LIMIT.max}, got ${got}`);
}

export interface KeysetPageRequest<Row, Position> {
  readonly cursors: CursorStore;
  readonly principal: Principal;
  readonly scope: CursorScope;
  /** The request's cursor token ("" or absent: the first page). */
  readonly cursor: string | undefined;
  readonly limit: number;
  /** Up to `count` rows after `after` (every row when undefined), in the list's order. */
  fetch(count: number, after: Position | undefined): Promise<Row[]>;
  /** The keyset position of a row: where the next page starts. */
  positionOf(last: Row): Position;
}

export interface KeysetPage<Row> {
  readonly rows: Row[];
  readonly pagination: { hasMore: boolean; nextCursor: string };
}

/**
 * One page of a keyset-paged v0 list (docs/architecture.md, "Paging"): the position the request's
 * cursor stands for, `limit + 1` rows after it (the extra row tells whether another page follows,
 * without a count query), and a token for the page's last row when one does.
 */
export async function keysetPage<Row, Position>(req: KeysetPageRequest<Row, Position>): Promise<KeysetPage<Row>> {
  const after = req.cursor ? await req.cursors.read<Position>(req.principal, req.scope, req.cursor) : undefined;
  const fetched = await req.fetch(req.limit + 1, after);
  const rows = fetched.slice(0, req.limit);
  const hasMore = fetched.length > req.limit;
  const last = rows[rows.length - 1];
  const nextCursor =
    hasMore && last ? await req.cursors.issue<Position>(req.principal, req.scope, req.positionOf(last)) : "";
  return { rows, pagination: { hasMore, nextCursor } };
}
