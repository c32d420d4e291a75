// AnalyticsService (the five public endpoints, and /code and /costs), built from its dependencies. (TelemetryService,
// internal ingest and rollup: telemetry-handlers.ts.) Each request reads on one pooled connection;
// an abandoned call (platform/abandoned.ts) stops once one is free and before its largest read.
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Kysely } from "kysely";
import {
  AnalyticsResponseSchema,
  UsersResponseSchema,
  type AnalyticsService,
  type GetTokensRequest,
  type GetUsersRequest,
} from "../../../gen/agentplane/analytics/v1/analytics_pb.js";
import type { Database, Executor } from "../../database.js";
import { findUser } from "../../organization/queries.js";
import { requireRole } from "../../platform/auth.js";
import { principalOf, type Principal } from "../../platform/context.js";
import { bodyText, type BodyPart, type ContentCoding } from "../../platform/deflate-parts.js";
import { onConnection, stopIfAbandoned } from "../../platform/abandoned.js";
import { parsePageLimit } from "../../platform/cursors.js";
import { invalidArgument } from "../../platform/errors.js";
import { CACHE_CONTROL, etagOf, etagOfParts, matchesIfNoneMatch } from "./caching.js";
import { dayOf, parseDayRange, type DayRange } from "../dates.js";
import type { DailyRow } from "../tables.js";
import {
  ACTIVITY_COLUMNS,
  PRODUCTIVITY_COLUMNS,
  readDays,
  readDayVersions,
  readUsersPage,
  TOKENS_BY_MODEL_COLUMNS,
  TOOLS_COLUMNS,
  type RenderedUserDay,
} from "./queries.js";
import { compressionOf, envelopeParts, httpBodyChunks, representationEtag, requestedCoding } from "./http-body.js";
import { printedMessage } from "../../platform/printed-json.js";
import { DeflatedDayCache, loadTokensParts, planTokens, readTokensDigests } from "./tokens-body.js";
import { CODE_COLUMNS, codeGroupBy, codeRows } from "./code.js";
import { COSTS_COLUMNS, costsGroupBy, costsRows } from "./costs.js";
import {
  activityGroupRows,
  activityRows,
  productivityRows,
  tokensGroupRows,
  toolsGroupRows,
  toolsRows,
} from "./rows.js";

export interface AnalyticsDeps {
  /** The database: the one write these endpoints make (a /tokens part's CRC-32, tokens-body.ts). */
  db: Kysely<Database>;
  /**
   * Where the endpoints read (DATABASE_READ_URL's replica); db when absent. Each answer and its
   * ETag come from this one database; see SCALING.md on replica lag.
   */
  readDb?: Kysely<Database>;
  /** The clock (tests pin it); analytics cover days before today's UTC date. */
  now?: () => number;
  /** Compressed /tokens day rows kept in memory (tokens-body.ts); one per process. */
  tokensCache?: DeflatedDayCache;
}

/** Default bound of the compressed /tokens rows kept in memory. */
export const TOKENS_CACHE_BYTES = 64 * 1024 * 1024;

const MAX_CURSOR = 256;

function groupBy(value: string, allowed: string): boolean {
  if (value === "") return false;
  if (value !== allowed)
    throw invalidArgument("group_by", `must be "${allowed}" or omitted, got "${value.slice(0, 40)}"`);
  return true;
}

/**
 * The shared start of every endpoint: owners and managers only, then the date rules. Returns the
 * caller and the validated range.
 */
function begin(
  ctx: HandlerContext,
  startDate: string,
  endDate: string,
  now: () => number,
): { principal: Principal; range: DayRange } {
  const principal = principalOf(ctx);
  requireRole(principal, ["owner", "manager"], "reading analytics");
  return { principal, range: parseDayRange(startDate, endDate, dayOf(now())) };
}

/**
 * Sets the validators and answers whether the client's copy is current (then a 304). `coding`:
 * on the REST routes of /tokens and /users (StreamTokens, StreamUsers), the coding the client
 * takes, or null; their answers, a 304 included (RFC 9110 §15.4.5), vary by Accept-Encoding.
 * Undefined: any other call, whose answer is one message.
 */
function notModified(ctx: HandlerContext, etag: string, coding?: ContentCoding | null): boolean {
  ctx.responseHeader.set("etag", coding === undefined ? etag : representationEtag(etag, coding));
  ctx.responseHeader.set("cache-control", CACHE_CONTROL);
  if (coding !== undefined) ctx.responseHeader.set("vary", "Accept-Encoding");
  if (!matchesIfNoneMatch(ctx.requestHeader.get("if-none-match"), etag)) return false;
  ctx.responseHeader.set("x-http-code", "304");
  return true;
}

/** The envelope's meta every endpoint shares (spec §2.1). */
function metaOf(principal: Principal, range: DayRange) {
  return { orgId: principal.orgId, startDate: range.start, endDate: range.end };
}

function envelope(ctx: HandlerContext, principal: Principal, range: DayRange, data: JsonObject[]) {
  const meta = metaOf(principal, range);
  if (notModified(ctx, etagOf({ data, meta }))) return { data: [], meta };
  return { data, meta };
}

/** The UserDayRow message (init shape) of a rendered /users row. */
function userDayRow(r: RenderedUserDay) {
  return {
    userId: r.user_id,
    userEmail: {
      kind:
        r.user_email === null
          ? { case: "nullValue" as const, value: 0 as const }
          : { case: "stringValue" as const, value: r.user_email },
    },
    date: r.date,
    toolCalls: r.tool_calls,
    billableTokens: r.billable_tokens,
    primaryModel: r.primary_model,
    primaryModelTier: r.primary_model_tier,
    filesCreated: r.files_created,
    filesEdited: r.files_edited,
    gitCommits: r.git_commits,
    gitPrsCreated: r.git_prs_created,
    mcpCalls: r.mcp_calls,
    skillCalls: r.skill_calls,
    slashCommands: r.slash_commands,
    hooks: r.hooks,
    sessions: r.sessions,
    messages: r.messages,
    userMessages: r.user_messages,
    assistantMessages: r.assistant_messages,
    autonomyRatio: r.autonomy_ratio,
    delegationLevel: r.delegation_level,
    languages: r.languages,
  };
}

/** /tokens's answer: grouped rows, or the rollup's stored day rows as parts; neither for a 304. */
interface TokensAnswer {
  meta: ReturnType<typeof metaOf>;
  rows?: JsonObject[];
  parts?: BodyPart[];
}

/** /users's page, undefined for a 304. */
type UsersAnswer = { meta: ReturnType<typeof metaOf> & { hasMore: boolean; nextCursor: string }; rowsJson?: string };

export function createAnalyticsService(deps: AnalyticsDeps): Partial<ServiceImpl<typeof AnalyticsService>> {
  const now = deps.now ?? Date.now;
  const tokensCache = deps.tokensCache ?? new DeflatedDayCache(TOKENS_CACHE_BYTES);
  const readDb = deps.readDb ?? deps.db;
  /**
   * A multi-statement read (an ETag's versions, then the answer). On a replica it runs in one
   * read-only REPEATABLE READ transaction, so that the ETag and the answer see one snapshot even
   * while the replica replays the primary's changes; on the database itself, as it always has.
   */
  const readTogether = <T>(ctx: HandlerContext, work: (conn: Executor) => Promise<T>): Promise<T> =>
    readDb === deps.db
      ? onConnection(readDb, ctx.signal, work)
      : readDb
          .transaction()
          .setIsolationLevel("repeatable read")
          .setAccessMode("read only")
          .execute((trx) => {
            stopIfAbandoned(ctx.signal);
            return work(trx);
          });
  /** The range's day rows with these columns, read once a pooled connection is free (platform/abandoned.ts). */
  const daysOf = <C extends keyof DailyRow>(
    ctx: HandlerContext,
    principal: Principal,
    range: DayRange,
    columns: readonly C[],
  ) => onConnection(readDb, ctx.signal, (conn) => readDays(conn, principal.orgId, range, columns));

  /** GetTokens and StreamTokens. `coding`: see notModified. */
  const tokens = async (ctx: HandlerContext, req: GetTokensRequest, coding?: ContentCoding | null) => {
    const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
    const grouped = groupBy(req.groupBy, "model");
    const meta = metaOf(principal, range);
    return readTogether(ctx, async (conn): Promise<TokensAnswer> => {
      if (grouped) {
        const rows = tokensGroupRows(await readDays(conn, principal.orgId, range, TOKENS_BY_MODEL_COLUMNS));
        return notModified(ctx, etagOf({ data: rows, meta }), coding) ? { meta } : { meta, rows };
      }
      // The rows were rendered by the rollup: the ETag comes from their digests, so a 304 reads
      // no rows. Compressed copies are used when the client takes a coding.
      const plan = planTokens(range, await readTokensDigests(conn, principal.orgId, range), coding ?? null);
      const etag = etagOfParts(["tokens", JSON.stringify(meta), ...plan.digests]);
      if (notModified(ctx, etag, coding)) return { meta };
      stopIfAbandoned(ctx.signal);
      const writeDb = readDb === deps.db ? conn : deps.db;
      return { meta, parts: await loadTokensParts(conn, tokensCache, principal.orgId, plan, writeDb) };
    });
  };

  /** GetUsers and StreamUsers. `coding`: see notModified. */
  const users = async (
    ctx: HandlerContext,
    req: GetUsersRequest,
    coding?: ContentCoding | null,
  ): Promise<UsersAnswer> => {
    const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
    const limit = parsePageLimit(req.limit);
    if (req.cursor.length > MAX_CURSOR)
      throw invalidArgument("cursor", `must be a user ID from meta.next_cursor (at most ${MAX_CURSOR} characters)`);
    const cursor = req.cursor === "" ? undefined : req.cursor;
    const page = await readTogether(ctx, async (conn) => {
      // A cursor is one of the organization's users (next_cursor names the last user of a page).
      // Anything else would answer an empty or restarted page as if it were one; another
      // organization's user is refused alike, so the answer says nothing about other organizations.
      if (cursor !== undefined && !(await findUser(conn, principal.orgId, cursor))) {
        const named = JSON.stringify(cursor.slice(0, 60));
        const problem = `must be a user ID from meta.next_cursor; no user ${named} in your organization`;
        throw invalidArgument("cursor", problem);
      }
      // The page follows from the request and the days' rollups: a 304 reads no rows.
      const versions = await readDayVersions(conn, principal.orgId, range);
      const etag = etagOfParts([
        "users",
        principal.orgId,
        range.start,
        range.end,
        String(limit),
        req.cursor,
        ...versions,
      ]);
      if (notModified(ctx, etag, coding)) return undefined;
      stopIfAbandoned(ctx.signal);
      return readUsersPage(conn, principal.orgId, range, limit, cursor);
    });
    if (page === undefined) return { meta: { ...metaOf(principal, range), hasMore: false, nextCursor: "" } };
    const meta = {
      ...metaOf(principal, range),
      hasMore: page.hasMore,
      nextCursor: page.hasMore ? page.lastUserId! : "",
    };
    return { meta, rowsJson: page.rowsJson };
  };

  /**
   * A REST answer's body as HttpBody chunks, compressed when the client takes it and the body is
   * worth it (http-body.ts); Content-Encoding goes out with the response headers.
   */
  function* restBody(ctx: HandlerContext, body: readonly BodyPart[], coding: ContentCoding | null) {
    const sent = compressionOf(body, coding);
    if (sent !== null) ctx.responseHeader.set("content-encoding", sent);
    for (const chunk of httpBodyChunks(body, sent)) {
      stopIfAbandoned(ctx.signal);
      yield chunk;
    }
  }

  return {
    async getTokens(req, ctx) {
      const { meta, rows, parts } = await tokens(ctx, req);
      // Over gRPC the stored rows become messages: parsed from their text.
      return { data: parts !== undefined ? (JSON.parse(bodyText(parts)) as JsonObject[]) : (rows ?? []), meta };
    },

    async *streamTokens(req, ctx) {
      const coding = requestedCoding(ctx);
      const { meta, rows, parts } = await tokens(ctx, req, coding);
      if (parts !== undefined) yield* restBody(ctx, envelopeParts(AnalyticsResponseSchema, { meta }, parts), coding);
      else if (rows !== undefined)
        yield* restBody(ctx, [printedMessage(AnalyticsResponseSchema, { data: rows, meta })], coding);
    },

    async getTools(req, ctx) {
      const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
      const grouped = groupBy(req.groupBy, "tool_name");
      const days = await daysOf(ctx, principal, range, TOOLS_COLUMNS);
      return envelope(ctx, principal, range, grouped ? toolsGroupRows(days) : toolsRows(range, days));
    },

    async getActivity(req, ctx) {
      const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
      const grouped = groupBy(req.groupBy, "client");
      const days = await daysOf(ctx, principal, range, ACTIVITY_COLUMNS);
      return envelope(ctx, principal, range, grouped ? activityGroupRows(days) : activityRows(range, days));
    },

    async getProductivity(req, ctx) {
      const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
      const days = await daysOf(ctx, principal, range, PRODUCTIVITY_COLUMNS);
      return envelope(ctx, principal, range, productivityRows(range, days));
    },

    async getCode(req, ctx) {
      const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
      const grouping = codeGroupBy(req.groupBy);
      const days = await daysOf(ctx, principal, range, CODE_COLUMNS);
      return envelope(ctx, principal, range, codeRows(range, days, grouping));
    },

    async getCosts(req, ctx) {
      const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
      const grouping = costsGroupBy(req.groupBy);
      const days = await daysOf(ctx, principal, range, COSTS_COLUMNS);
      return envelope(ctx, principal, range, costsRows(range, days, grouping));
    },

    async getUsers(req, ctx) {
      const { meta, rowsJson } = await users(ctx, req);
      if (rowsJson === undefined) return { data: [], meta };
      const rows = JSON.parse(`[${rowsJson}]`) as RenderedUserDay[];
      return { data: rows.map(userDayRow), meta };
    },

    async *streamUsers(req, ctx) {
      const coding = requestedCoding(ctx);
      const { meta, rowsJson } = await users(ctx, req, coding);
      if (rowsJson === undefined) return;
      yield* restBody(ctx, envelopeParts(UsersResponseSchema, { meta }, ["[", rowsJson, "]"]), coding);
    },
  };
}
