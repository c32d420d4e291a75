// AnalyticsService (the five public endpoints, and /code and /costs), built from its dependencies. (TelemetryService,
// internal ingest and rollup: telemetry-handlers.ts.) Each request reads on one pooled connection;
// an abandoned call (platform/abandoned.ts) stops once one is free and before its largest read.
import { gzipSync, constants as zlibConstants } from "node:zlib";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { DescMessage, JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type { Kysely } from "kysely";
import {
  ActivityGroupRowSchema,
  ActivityRowSchema,
  AnalyticsResponseSchema,
  CodeGroupRowSchema,
  CodeRowSchema,
  CostsGroupRowSchema,
  CostsRowSchema,
  ProductivityRowSchema,
  TokensGroupRowSchema,
  TokensRowSchema,
  ToolsGroupRowSchema,
  ToolsRowSchema,
  UserDayRowSchema,
  UsersResponseSchema,
  type AnalyticsService,
  type GetActivityRequest,
  type GetCodeRequest,
  type GetCostsRequest,
  type GetProductivityRequest,
  type GetTokensRequest,
  type GetToolsRequest,
  type GetUsersRequest,
} from "../../../gen/agentplane/analytics/v1/analytics_pb.js";
import type { HttpBodySchema } from "../../../gen/google/api/httpbody_pb.js";
import type { Database, Executor } from "../../database.js";
import { findUser } from "../../organization/queries.js";
import { requireRole } from "../../platform/auth.js";
import { principalOf, type Principal } from "../../platform/context.js";
import { bodyText, type BodyPart, type ContentCoding } from "../../platform/deflate-parts.js";
import { onConnection, stopIfAbandoned } from "../../platform/abandoned.js";
import { COMPRESSOR_MIN_CONTENT_LENGTH, compressorChoosesGzip } from "../../platform/compressor.js";
import { parsePageLimit } from "../../platform/cursors.js";
import { invalidArgument } from "../../platform/errors.js";
import { etagOfParts, matchesIfNoneMatch } from "../../platform/entity-tags.js";
import { CACHE_CONTROL, etagOf } from "./caching.js";
import { dayOf, parseDayRange, type DayRange } from "../dates.js";
import type { DailyRow } from "../tables.js";
import {
  ACTIVITY_COLUMNS,
  PRODUCTIVITY_COLUMNS,
  readDays,
  readDayVersions,
  type UserDayKey,
  readUserRowsAfter,
  readUsersPage,
  TOKENS_BY_MODEL_COLUMNS,
  TOOLS_COLUMNS,
  type RenderedUserDay,
} from "./queries.js";
import { compressionOf, envelopeParts, httpBodyChunks, representationEtag, requestedCoding } from "./http-body.js";
import { printedMessage } from "../../platform/printed-json.js";
import {
  DeflatedDayCache,
  loadTokensParts,
  planTokens,
  readTexts,
  readTokensDigests,
  type TokensPlan,
} from "./tokens-body.js";
import {
  answerFormat,
  contentDisposition,
  exportChunks,
  RowWriter,
  type AnswerFormat,
  type ExportFormat,
} from "./export.js";
import { CODE_COLUMNS, codeGroupBy, codeRows } from "./code.js";
import { COSTS_COLUMNS, costsGroupBy, costsRows } from "./costs.js";
import {
  activityGroupRows,
  activityRows,
  productivityRows,
  tokensGroupRows,
  toolsGroupRows,
  toolsRows,
  zeroTokensRow,
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

/** The envelope's meta every endpoint shares (docs/interface.md §2.1). */
function metaOf(principal: Principal, range: DayRange) {
  return { orgId: principal.orgId, startDate: range.start, endDate: range.end };
}

function envelope(ctx: HandlerContext, principal: Principal, range: DayRange, data: JsonObject[]) {
  const meta = metaOf(principal, range);
  if (notModified(ctx, etagOf({ data, meta }))) return { data: [], meta };
  return { data, meta };
}

/**
 * An answer whose rows are at hand (at most a row per day and group): /tools, /activity,
 * /productivity and grouped /tokens. getX answers it as messages (envelopeOf), streamX as the
 * REST body (rowsBody); an endpoint of this kind needs nothing else for its exports.
 */
interface RowsAnswer {
  principal: Principal;
  range: DayRange;
  format: AnswerFormat;
  /** The endpoint's name, as the export's file name says it. */
  endpoint: string;
  /** group_by as requested, "" without. */
  groupBy: string;
  /** The typed message each row is the JSON of: its fields are an export's columns (export.ts). */
  rowSchema: DescMessage;
  rows: JsonObject[];
}

function envelopeOf(ctx: HandlerContext, a: RowsAnswer) {
  return envelope(ctx, a.principal, a.range, a.rows);
}

/** The gzip settings of envoy.yaml's compressor (services/platform/compressor.ts). */
const ENVOY_GZIP = { level: zlibConstants.Z_BEST_SPEED } as const;

/**
 * The REST body of a RowsAnswer. JSON: the bytes and headers these routes had as unary methods
 * behind either edge (the transcoder's print, the compressor filter's gzip from 8 KiB with Vary
 * and a weakened ETag, a 304 with the strong one), now made here because a stream's body passes
 * both edges' compressors untouched. An export: export.ts, under an ETag of its own.
 */
async function* rowsBody(ctx: HandlerContext, a: RowsAnswer) {
  const meta = metaOf(a.principal, a.range);
  if (a.format === "json") {
    const etag = etagOf({ data: a.rows, meta });
    if (notModified(ctx, etag)) return;
    const text = Buffer.from(printedMessage(AnalyticsResponseSchema, { data: a.rows, meta }), "utf8");
    let body = text;
    if (text.length >= COMPRESSOR_MIN_CONTENT_LENGTH) {
      ctx.responseHeader.set("vary", "Accept-Encoding");
      if (compressorChoosesGzip(ctx.requestHeader.get("accept-encoding") ?? undefined)) {
        body = gzipSync(text, ENVOY_GZIP);
        ctx.responseHeader.set("content-encoding", "gzip");
        ctx.responseHeader.set("etag", `W/${etag}`);
      }
    }
    for (const chunk of httpBodyChunks([body], null)) {
      stopIfAbandoned(ctx.signal);
      yield chunk;
    }
    return;
  }
  const coding = requestedCoding(ctx);
  if (notModified(ctx, etagOf({ format: a.format, data: a.rows, meta }), coding)) return;
  ctx.responseHeader.set("content-disposition", contentDisposition(a.endpoint, a.groupBy, a.range, a.format));
  const writer = new RowWriter(a.format, a.rowSchema);
  yield* exportChunks(ctx, [writer.header(), ...a.rows.map((r) => writer.row(r))], a.format, coding);
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

type HttpBodyMessages = AsyncIterable<MessageInitShape<typeof HttpBodySchema>>;

/**
 * /tokens's answer: grouped rows, or the rollup's stored day rows as parts; neither for a 304.
 * An export (StreamTokens with a format): its messages as `body`.
 */
interface TokensAnswer {
  meta: ReturnType<typeof metaOf>;
  rows?: JsonObject[];
  parts?: BodyPart[];
  body?: HttpBodyMessages;
}

/** /users's page, undefined for a 304; an export (StreamUsers with a format): its messages as `body`. */
type UsersAnswer = {
  meta: ReturnType<typeof metaOf> & { hasMore: boolean; nextCursor: string };
  rowsJson?: string;
  body?: HttpBodyMessages;
};

/** Days of /tokens rows an export reads at a time: a day of a 10,000-user organization is ~2 MB. */
const TOKENS_EXPORT_DAYS = 4;
/** /users rows an export reads at a time (each a few hundred bytes). */
const USERS_EXPORT_ROWS = 2000;

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

  /** The text of a /tokens export of day rows: the header, then the days, read a few at a time. */
  async function* tokensExportText(ctx: HandlerContext, orgId: string, plan: TokensPlan, writer: RowWriter) {
    yield writer.header();
    const stored = new Set(plan.days.map((d) => d.day));
    for (let i = 0; i < plan.dates.length; i += TOKENS_EXPORT_DAYS) {
      const dates = plan.dates.slice(i, i + TOKENS_EXPORT_DAYS);
      const wanted = dates.filter((date) => stored.has(date));
      // Each batch on a connection of its own: a slow client holds none between batches. A day
      // rolled up again meanwhile is read as it is now, as the JSON answer's texts are.
      const texts =
        wanted.length === 0
          ? new Map<string, string>()
          : await onConnection(readDb, ctx.signal, (conn) => readTexts(conn, orgId, wanted));
      for (const date of dates) yield writer.storedRow(texts.get(date) ?? zeroTokensRow(date));
    }
  }

  /** /tokens as an export: grouped rows at hand, or the stored day rows streamed; no body for a 304. */
  const tokensExport = async (
    ctx: HandlerContext,
    principal: Principal,
    range: DayRange,
    groupBy: string,
    format: ExportFormat,
    coding: ContentCoding | null,
  ): Promise<TokensAnswer> => {
    const meta = metaOf(principal, range);
    if (groupBy !== "") {
      const rows = tokensGroupRows(await daysOf(ctx, principal, range, TOKENS_BY_MODEL_COLUMNS));
      const answer = { principal, range, format, endpoint: "tokens", groupBy, rowSchema: TokensGroupRowSchema, rows };
      return { meta, body: rowsBody(ctx, answer) };
    }
    const digests = await onConnection(readDb, ctx.signal, (conn) => readTokensDigests(conn, principal.orgId, range));
    const plan = planTokens(range, digests, null);
    if (notModified(ctx, etagOfParts(["tokens", format, JSON.stringify(meta), ...plan.digests]), coding))
      return { meta };
    ctx.responseHeader.set("content-disposition", contentDisposition("tokens", "", range, format));
    const text = tokensExportText(ctx, principal.orgId, plan, new RowWriter(format, TokensRowSchema));
    return { meta, body: exportChunks(ctx, text, format, coding) };
  };

  /** GetTokens and StreamTokens. `coding`: see notModified. */
  const tokens = async (ctx: HandlerContext, req: GetTokensRequest, coding?: ContentCoding | null) => {
    const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
    const grouped = groupBy(req.groupBy, "model");
    const format = answerFormat(ctx, req.format);
    if (format !== "json") return tokensExport(ctx, principal, range, req.groupBy, format, coding ?? null);
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

  /** The text of a /users export: the header, then every row of the range, a batch at a time. */
  async function* usersExportText(ctx: HandlerContext, orgId: string, range: DayRange, writer: RowWriter) {
    yield writer.header();
    let after: UserDayKey | undefined;
    for (;;) {
      // A connection per batch, as tokensExportText.
      const rows = await onConnection(readDb, ctx.signal, (conn) =>
        readUserRowsAfter(conn, orgId, range, after, USERS_EXPORT_ROWS),
      );
      for (const row of rows) yield writer.storedRow(row.row_json);
      if (rows.length < USERS_EXPORT_ROWS) return;
      const last = rows[rows.length - 1]!;
      after = { user_id: last.user_id, day: last.day };
    }
  }

  /**
   * /users as an export: every user of the range in one answer, not a page (an export is the
   * whole table; it is streamed, so its size costs no memory). limit and cursor page the JSON
   * answer only: with a format they are a 400, rather than an export that silently holds less.
   */
  const usersExport = async (
    ctx: HandlerContext,
    req: GetUsersRequest,
    principal: Principal,
    range: DayRange,
    format: ExportFormat,
    coding: ContentCoding | null,
  ): Promise<UsersAnswer> => {
    const unpaged = `is not used with format=${format}: an export holds every user of the range`;
    if (req.limit !== undefined) throw invalidArgument("limit", unpaged);
    if (req.cursor !== "") throw invalidArgument("cursor", unpaged);
    const meta = { ...metaOf(principal, range), hasMore: false, nextCursor: "" };
    const versions = await onConnection(readDb, ctx.signal, (conn) => readDayVersions(conn, principal.orgId, range));
    const etag = etagOfParts(["users", format, principal.orgId, range.start, range.end, ...versions]);
    if (notModified(ctx, etag, coding)) return { meta };
    ctx.responseHeader.set("content-disposition", contentDisposition("users", "", range, format));
    const text = usersExportText(ctx, principal.orgId, range, new RowWriter(format, UserDayRowSchema));
    return { meta, body: exportChunks(ctx, text, format, coding) };
  };

  /** /tools, /activity, /productivity, /code and /costs: their rows (see RowsAnswer). */
  const toolsAnswer = async (ctx: HandlerContext, req: GetToolsRequest): Promise<RowsAnswer> => {
    const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
    const grouped = groupBy(req.groupBy, "tool_name");
    const format = answerFormat(ctx, req.format);
    const days = await daysOf(ctx, principal, range, TOOLS_COLUMNS);
    const rows = grouped ? toolsGroupRows(days) : toolsRows(range, days);
    const rowSchema = grouped ? ToolsGroupRowSchema : ToolsRowSchema;
    return { principal, range, format, endpoint: "tools", groupBy: req.groupBy, rowSchema, rows };
  };
  const activityAnswer = async (ctx: HandlerContext, req: GetActivityRequest): Promise<RowsAnswer> => {
    const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
    const grouped = groupBy(req.groupBy, "client");
    const format = answerFormat(ctx, req.format);
    const days = await daysOf(ctx, principal, range, ACTIVITY_COLUMNS);
    const rows = grouped ? activityGroupRows(days) : activityRows(range, days);
    const rowSchema = grouped ? ActivityGroupRowSchema : ActivityRowSchema;
    return { principal, range, format, endpoint: "activity", groupBy: req.groupBy, rowSchema, rows };
  };
  const productivityAnswer = async (ctx: HandlerContext, req: GetProductivityRequest): Promise<RowsAnswer> => {
    const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
    const format = answerFormat(ctx, req.format);
    const rows = productivityRows(range, await daysOf(ctx, principal, range, PRODUCTIVITY_COLUMNS));
    return { principal, range, format, endpoint: "productivity", groupBy: "", rowSchema: ProductivityRowSchema, rows };
  };

  const codeAnswer = async (ctx: HandlerContext, req: GetCodeRequest): Promise<RowsAnswer> => {
    const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
    const grouping = codeGroupBy(req.groupBy);
    const format = answerFormat(ctx, req.format);
    const rows = codeRows(range, await daysOf(ctx, principal, range, CODE_COLUMNS), grouping);
    const rowSchema = grouping === null ? CodeRowSchema : CodeGroupRowSchema;
    return { principal, range, format, endpoint: "code", groupBy: req.groupBy, rowSchema, rows };
  };
  const costsAnswer = async (ctx: HandlerContext, req: GetCostsRequest): Promise<RowsAnswer> => {
    const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
    const grouping = costsGroupBy(req.groupBy);
    const format = answerFormat(ctx, req.format);
    const rows = costsRows(range, await daysOf(ctx, principal, range, COSTS_COLUMNS), grouping);
    const rowSchema = grouping === null ? CostsRowSchema : CostsGroupRowSchema;
    return { principal, range, format, endpoint: "costs", groupBy: req.groupBy, rowSchema, rows };
  };

  /** GetUsers and StreamUsers. `coding`: see notModified. */
  const users = async (
    ctx: HandlerContext,
    req: GetUsersRequest,
    coding?: ContentCoding | null,
  ): Promise<UsersAnswer> => {
    const { principal, range } = begin(ctx, req.startDate, req.endDate, now);
    const format = answerFormat(ctx, req.format);
    if (format !== "json") return usersExport(ctx, req, principal, range, format, coding ?? null);
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
      const { meta, rows, parts, body } = await tokens(ctx, req, coding);
      if (body !== undefined) yield* body;
      else if (parts !== undefined)
        yield* restBody(ctx, envelopeParts(AnalyticsResponseSchema, { meta }, parts), coding);
      else if (rows !== undefined)
        yield* restBody(ctx, [printedMessage(AnalyticsResponseSchema, { data: rows, meta })], coding);
    },

    async getTools(req, ctx) {
      return envelopeOf(ctx, await toolsAnswer(ctx, req));
    },

    async getActivity(req, ctx) {
      return envelopeOf(ctx, await activityAnswer(ctx, req));
    },

    async getProductivity(req, ctx) {
      return envelopeOf(ctx, await productivityAnswer(ctx, req));
    },

    // The REST routes of the endpoints with a RowsAnswer (StreamTokens and StreamUsers: see
    // tokens and users).
    async *streamTools(req, ctx) {
      yield* rowsBody(ctx, await toolsAnswer(ctx, req));
    },

    async *streamActivity(req, ctx) {
      yield* rowsBody(ctx, await activityAnswer(ctx, req));
    },

    async *streamProductivity(req, ctx) {
      yield* rowsBody(ctx, await productivityAnswer(ctx, req));
    },

    async getCode(req, ctx) {
      return envelopeOf(ctx, await codeAnswer(ctx, req));
    },

    async getCosts(req, ctx) {
      return envelopeOf(ctx, await costsAnswer(ctx, req));
    },

    async *streamCode(req, ctx) {
      yield* rowsBody(ctx, await codeAnswer(ctx, req));
    },

    async *streamCosts(req, ctx) {
      yield* rowsBody(ctx, await costsAnswer(ctx, req));
    },

    async getUsers(req, ctx) {
      const { meta, rowsJson } = await users(ctx, req);
      if (rowsJson === undefined) return { data: [], meta };
      const rows = JSON.parse(`[${rowsJson}]`) as RenderedUserDay[];
      return { data: rows.map(userDayRow), meta };
    },

    async *streamUsers(req, ctx) {
      const coding = requestedCoding(ctx);
      const { meta, rowsJson, body } = await users(ctx, req, coding);
      if (body !== undefined) yield* body;
      if (rowsJson === undefined) return;
      yield* restBody(ctx, envelopeParts(UsersResponseSchema, { meta }, ["[", rowsJson, "]"]), coding);
    },
  };
}
