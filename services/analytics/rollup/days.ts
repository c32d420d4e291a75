// Recomputes one organization's aggregates for a set of UTC days from their raw events
// (docs/metrics.md), set-based: each statement covers all the days at once, and the
// raw events are read twice in all:
// 1. pass 1 collects, per day, the model usage per user and model, the counts of every
//    breakdown key and the distinct session ids (a temporary table of a few hundred rows a day);
// 2. pass 2 aggregates the events per day and user (another temporary table);
// 3. from those: the per-user-and-model rows (credits), the per-user day rows (/users, with their
//    rendered JSON), and the day rows with every scalar and breakdown of /tokens, /tools,
//    /activity and /productivity (plus the rendered /tokens row).
// Runs inside the caller's transaction (rollup.ts: repeatable read, so every statement sees one
// snapshot). Weekly and monthly active users are filled in afterwards by active-windows.ts.
// The credit multipliers and model prices pass 3 applies are set and listed here too.
import { sql, type RawBuilder, type Selectable, type Transaction } from "kysely";
import type { Database, Executor } from "../../database.js";
import { AUTONOMY_MODES } from "../ingest/events.js";
import type { CreditMultipliersTable } from "../tables.js";
import { countedEvent, rawEventsOfDay } from "./plan.js";
import { deflatePart } from "../../platform/deflate-parts.js";

/** Bits of analytics_user_daily.clients. */
export const CLIENT_BITS = { "terminal-ui": 1, web: 2, "non-interactive-cli": 4 } as const;

interface Chunk {
  orgId: string;
  /** Sorted, distinct. */
  days: string[];
}

function chunkOf(orgId: string, days: readonly string[]): Chunk {
  return { orgId, days: [...new Set(days)].sort() };
}

/**
 * The chunk's days as a row source `d(day)`, each joined laterally to an aggregate of its own
 * raw events (eventsOfDay). Aggregating day by day keeps every hash table a day's size, which
 * the planner estimates well; over the whole range it estimates millions of groups for
 * expressions it has no statistics on and falls back to sorting every event.
 */
const eachDayOf = (c: Chunk) => sql`unnest(${c.days}::date[]) as d(day)`;

/**
 * The raw events of the organization on day `d.day` (one key of the (org_id, UTC day) index)
 * that count: model_usage reported both as an OpenTelemetry metric and as log events counts once
 * (plan.ts countedEvent).
 */
const eventsOfDay = (c: Chunk) =>
  sql`${rawEventsOfDay("e", c.orgId, sql.raw("d.day"))} and ${countedEvent("e", c.orgId, sql.raw("d.day"))}`;

async function clearDays(db: Executor, c: Chunk): Promise<void> {
  for (const table of ["analytics_user_model_daily", "analytics_user_daily", "analytics_daily"] as const) {
    await sql`delete from ${sql.table(table)} where org_id = ${c.orgId} and day = any(${c.days}::date[])`.execute(db);
  }
}

/** grouping(session_id) of pass 1's rows: its event rows, and its (distinct) session rows. */
const EVENT_ROWS = 1;
const SESSION_ROWS = 0;

/** The temporary table of the grouping-sets pass (dropped at commit). */
const GROUPS = sql.raw("analytics_rollup_groups");

/**
 * Pass 1 over the raw events, two hash tables per day filled in one scan: the events counted by
 * every key any breakdown or the per-model sums need (mu_user is the user of model_usage events
 * only; the other fields are set only on their own type's events, so a day has a few hundred
 * such groups), and the distinct session ids.
 */
async function collectGroups(db: Executor, c: Chunk): Promise<void> {
  await sql`drop table if exists pg_temp.${GROUPS}`.execute(db);
  await sql`
    create temporary table ${GROUPS} on commit drop as
    select d.day, x.*
    from ${eachDayOf(c)}
    cross join lateral (
      select type, mu_user, model_id, tool, mcp_server, autonomy, name, hook_event, hook_matcher, hook_command,
        extension, language, code_user, decision, session_id,
        count(*) as n,
        -- A model reported under both tiers on one day counts as thinking.
        max(model_tier) as model_tier,
        sum(input_tokens) as input_tokens, sum(output_tokens) as output_tokens,
        sum(cache_read_tokens) as cache_read_tokens, sum(cache_write_tokens) as cache_write_tokens,
        -- Costs: what clients reported, and the tokens of the usage they reported no cost for
        -- (priced by insertUserModelRows). numeric: an exact sum, whatever the order.
        sum(cost_usd::numeric) as reported_cost_usd,
        sum(input_tokens) filter (where cost_usd is null) as unreported_input,
        sum(output_tokens) filter (where cost_usd is null) as unreported_output,
        sum(cache_read_tokens) filter (where cost_usd is null) as unreported_cache_read,
        sum(cache_write_tokens) filter (where cost_usd is null) as unreported_cache_write,
        sum(lines_added) as lines_added, sum(lines_removed) as lines_removed,
        grouping(session_id) as g
      from (
        select e.type, case when e.type = 'model_usage' then e.user_id collate "C" end as mu_user, e.model_id collate "C" as model_id,
          e.tool collate "C" as tool, e.mcp_server collate "C" as mcp_server, e.autonomy, e.name collate "C" as name,
          e.hook_event collate "C" as hook_event, e.hook_matcher collate "C" as hook_matcher, e.hook_command collate "C" as hook_command,
          e.extension collate "C" as extension, e.language collate "C" as language, e.session_id,
          -- The user of the code events (/code by_user), like mu_user for model usage.
          case when e.type in ('lines_changed', 'edit_decision') then e.user_id collate "C" end as code_user, e.decision,
          e.model_tier, e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens,
          e.cost_usd, e.lines_added, e.lines_removed
        from analytics_events e
        where ${eventsOfDay(c)}
      ) e
      group by grouping sets (
        (type, mu_user, model_id, tool, mcp_server, autonomy, name, hook_event, hook_matcher, hook_command, extension, language,
          code_user, decision),
        (session_id))
    ) x`.execute(db);
}

// Credit multipliers per model_id (docs/metrics.md, "/tokens": billable tokens × m, m = 1 unless
// configured). Stored in analytics_credit_multipliers, set with `agentplane multiplier set`; the
// rollup applies them, so a change counts for days rolled up afterwards (re-run
// `agentplane rollup --from D --to D` to apply it to past days).
export async function setCreditMultiplier(db: Executor, modelId: string, multiplier: number): Promise<void> {
  if (!modelId || modelId.length > 256) throw new Error("model_id must be 1 to 256 characters");
  if (!Number.isFinite(multiplier) || multiplier < 0) throw new Error("multiplier must be a number >= 0");
  await sql`
    insert into analytics_credit_multipliers (model_id, multiplier) values (${modelId}, ${String(multiplier)}::numeric)
    on conflict (model_id) do update set multiplier = excluded.multiplier, updated_at = now()`.execute(db);
}

export async function removeCreditMultiplier(db: Executor, modelId: string): Promise<boolean> {
  const res = await db.deleteFrom("analytics_credit_multipliers").where("model_id", "=", modelId).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

type CreditMultiplier = Pick<Selectable<CreditMultipliersTable>, "model_id" | "multiplier">;

export async function listCreditMultipliers(db: Executor): Promise<CreditMultiplier[]> {
  return db.selectFrom("analytics_credit_multipliers").select(["model_id", "multiplier"]).orderBy("model_id").execute();
}

// Prices per model_id in US dollars per million tokens (docs/analytics.md "Costs"), stored in
// analytics_model_prices and set with `agentplane price set`. Like the multipliers, the rollup
// applies them: a change counts for days rolled up afterwards (re-run `agentplane rollup` for
// past days). They price only usage without a client-reported cost.
export interface ModelPrice {
  model_id: string;
  input_per_million: number;
  output_per_million: number;
  cache_read_per_million: number;
  cache_write_per_million: number;
}

/** The price fields (per million tokens) in the order of the CLI's options. */
export const PRICE_FIELDS = [
  "input_per_million",
  "output_per_million",
  "cache_read_per_million",
  "cache_write_per_million",
] as const;

export async function setModelPrice(db: Executor, price: ModelPrice): Promise<void> {
  if (!price.model_id || price.model_id.length > 256) throw new Error("model_id must be 1 to 256 characters");
  for (const field of PRICE_FIELDS)
    if (!Number.isFinite(price[field]) || price[field] < 0) throw new Error(`${field} must be a number >= 0`);
  const [input, output, cacheRead, cacheWrite] = PRICE_FIELDS.map((f) => String(price[f]));
  await sql`
    insert into analytics_model_prices (model_id, input_per_million, output_per_million, cache_read_per_million, cache_write_per_million)
    values (${price.model_id}, ${input}::numeric, ${output}::numeric, ${cacheRead}::numeric, ${cacheWrite}::numeric)
    on conflict (model_id) do update set input_per_million = excluded.input_per_million,
      output_per_million = excluded.output_per_million, cache_read_per_million = excluded.cache_read_per_million,
      cache_write_per_million = excluded.cache_write_per_million, updated_at = now()`.execute(db);
}

export async function removeModelPrice(db: Executor, modelId: string): Promise<boolean> {
  const res = await db.deleteFrom("analytics_model_prices").where("model_id", "=", modelId).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

export async function listModelPrices(db: Executor): Promise<ModelPrice[]> {
  return db
    .selectFrom("analytics_model_prices")
    .select(["model_id", ...PRICE_FIELDS])
    .orderBy("model_id")
    .execute();
}

/**
 * Per day, user and model: token sums and credits, exact (numeric), multiplier applied per model;
 * and the cost: what the client reported, plus the tokens of the usage it reported no cost for
 * at the model's price, or, for a model without a price, nothing (those tokens are unpriced).
 */
async function insertUserModelRows(db: Executor, c: Chunk): Promise<void> {
  await sql`
    insert into analytics_user_model_daily (org_id, day, user_id, model_id, model_tier,
      input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, billable_tokens,
      cost_usd, reported_cost_usd, unpriced_tokens)
    select ${c.orgId}, g.day, g.mu_user, g.model_id, g.model_tier,
      g.input_tokens, g.output_tokens, g.cache_read_tokens, g.cache_write_tokens,
      (g.input_tokens + g.output_tokens + g.cache_write_tokens + g.cache_read_tokens * 0.1) * coalesce(m.multiplier, 1),
      g.reported_cost_usd + coalesce((g.unreported_input * p.input_per_million + g.unreported_output * p.output_per_million
        + g.unreported_cache_read * p.cache_read_per_million + g.unreported_cache_write * p.cache_write_per_million) / 1000000, 0),
      g.reported_cost_usd,
      case when p.model_id is null
        then g.unreported_input + g.unreported_output + g.unreported_cache_read + g.unreported_cache_write else 0 end
    from (
      select day, mu_user, model_id, max(model_tier) as model_tier,
        sum(input_tokens) as input_tokens, sum(output_tokens) as output_tokens,
        sum(cache_read_tokens) as cache_read_tokens, sum(cache_write_tokens) as cache_write_tokens,
        coalesce(sum(reported_cost_usd), 0) as reported_cost_usd,
        coalesce(sum(unreported_input), 0) as unreported_input, coalesce(sum(unreported_output), 0) as unreported_output,
        coalesce(sum(unreported_cache_read), 0) as unreported_cache_read,
        coalesce(sum(unreported_cache_write), 0) as unreported_cache_write
      from ${GROUPS}
      where g = ${EVENT_ROWS} and mu_user is not null
      group by day, mu_user, model_id
    ) g
    left join analytics_credit_multipliers m on m.model_id = g.model_id
    left join analytics_model_prices p on p.model_id = g.model_id`.execute(db);
}

/** Count of the day's session starts in one autonomy mode (a column of the user scan). */
const modeCount = (mode: string) =>
  sql.raw(`count(*) filter (where e.type = 'session_start' and e.autonomy = '${mode}')`);

/**
 * The most frequent mode; CASE tests in the order of AUTONOMY_MODES, which breaks ties as
 * docs/metrics.md says (auto-high, auto-medium, auto-low, spec, manual). Null without sessions.
 */
const DOMINANT_MODE = sql.raw(
  `case greatest(${AUTONOMY_MODES.map((_, i) => `c.m${i}`).join(", ")}) when 0 then null ` +
    AUTONOMY_MODES.map((m, i) => `when c.m${i} then '${m}'`).join(" ") +
    " end",
);

/** The temporary table of pass 2's per-user aggregates (dropped at commit). */
const USERS = sql.raw("analytics_rollup_users");

/**
 * Pass 2 over the raw events: per day, one row per user with events (counts, clients, session
 * modes, languages), into USERS. insertUserRows completes them with credits and the primary
 * model from the per-model rows, and for a day without a session start the user's latest
 * earlier mode; each row also gets its /users JSON (docs/interface.md §2.6 field names).
 */
async function aggregateUsers(db: Executor, c: Chunk): Promise<void> {
  await sql`drop table if exists pg_temp.${USERS}`.execute(db);
  await sql`
    create temporary table ${USERS} on commit drop as
    select c.*
      from ${eachDayOf(c)}
      cross join lateral (
        select d.day, e.user_id collate "C" as user_id,
          count(*) as events,
          count(*) filter (where e.type = 'tool_call') as tool_calls,
          count(*) filter (where e.type = 'tool_call' and e.mcp_server is not null) as mcp_calls,
          count(*) filter (where e.type = 'skill') as skill_calls,
          count(*) filter (where e.type = 'slash_command') as slash_commands,
          count(*) filter (where e.type = 'hook') as hooks,
          count(*) filter (where e.type = 'session_start') as sessions,
          count(*) filter (where e.type = 'message') as messages,
          count(*) filter (where e.type = 'message' and e.role = 'user') as user_messages,
          count(*) filter (where e.type = 'message' and e.role = 'assistant') as assistant_messages,
          count(*) filter (where e.type = 'file_op' and e.op = 'created') as files_created,
          count(*) filter (where e.type = 'file_op' and e.op = 'edited') as files_edited,
          count(*) filter (where e.type = 'git_commit') as git_commits,
          count(*) filter (where e.type = 'pr_created') as git_prs_created,
          bit_or(case e.client when 'terminal-ui' then ${CLIENT_BITS["terminal-ui"]}::int
                               when 'web' then ${CLIENT_BITS.web}::int
                               else ${CLIENT_BITS["non-interactive-cli"]}::int end)::smallint as clients,
          max(e.user_email) as user_email,
          -- The distinct languages of the user's file ops, as the keys of an object: unlike
          -- array_agg(distinct ...), which sorts every event, it aggregates in the hash table.
          array(select k collate "C" from jsonb_object_keys(coalesce(jsonb_object_agg(e.language, 0) filter (where e.type = 'file_op'), '{}')) k
            order by 1) as languages,
          ${sql.join(AUTONOMY_MODES.map((m, i) => sql`${modeCount(m)} as ${sql.raw(`m${i}`)}`))}
        from analytics_events e
        where ${eventsOfDay(c)}
        group by e.user_id collate "C"
      ) c`.execute(db);
}

/** The per-user day rows from pass 2's aggregate, with credits, primary model and delegation. */
async function insertUserRows(db: Executor, c: Chunk): Promise<void> {
  await sql`
    insert into analytics_user_daily (org_id, day, user_id, user_email, events, tool_calls, mcp_calls,
      skill_calls, slash_commands, hooks, sessions, messages, user_messages, assistant_messages,
      files_created, files_edited, git_commits, git_prs_created, billable_tokens,
      primary_model, primary_model_tier, delegation_level, languages, clients, row_json)
    -- The row as the edge prints JSON: to_json of a record is compact (json_build_object writes
    -- " : " and ", "), and float8 prints the shortest digits (numeric kept round()'s trailing zero).
    select r.*, (select to_json(j) from (select
        r.user_id, r.user_email, r.day as "date", r.tool_calls,
        round(r.billable_tokens, 2)::float8 as billable_tokens, r.primary_model, r.primary_model_tier,
        r.files_created, r.files_edited, r.git_commits, r.git_prs_created,
        r.mcp_calls, r.skill_calls, r.slash_commands, r.hooks,
        r.sessions, r.messages, r.user_messages, r.assistant_messages,
        case when r.user_messages > 0 then r.tool_calls::float8 / r.user_messages else 0 end as autonomy_ratio,
        r.delegation_level, r.languages) j)::text
    from (
      select ${c.orgId}::text as org_id, c.day, c.user_id, coalesce(u.email, c.user_email) as user_email, c.events, c.tool_calls, c.mcp_calls,
        c.skill_calls, c.slash_commands, c.hooks, c.sessions, c.messages, c.user_messages, c.assistant_messages,
        c.files_created, c.files_edited, c.git_commits, c.git_prs_created, coalesce(pm.billable_tokens, 0) as billable_tokens,
        coalesce(pm.model_id, '') as primary_model, coalesce(pm.model_tier, '') as primary_model_tier,
        coalesce(${DOMINANT_MODE}, prev.mode, 'manual') as delegation_level,
        c.languages, c.clients
      from ${USERS} c
      left join users u on u.org_id = ${c.orgId} and u.id collate "C" = c.user_id
      -- Credits of the day, and the model with the most of them (ties: the smallest model_id).
      left join (
        select distinct on (m.day, m.user_id) m.day, m.user_id, m.model_id, m.model_tier,
          sum(m.billable_tokens) over (partition by m.day, m.user_id) as billable_tokens
        from analytics_user_model_daily m
        where m.org_id = ${c.orgId} and m.day = any(${c.days}::date[])
        order by m.day, m.user_id, m.billable_tokens desc, m.model_id
      ) pm on pm.day = c.day and pm.user_id = c.user_id
      -- Without a session start that day: the user's most recent earlier mode (a backward scan of
      -- the session starts' partial index, stopping at the first).
      left join lateral (
        select p.autonomy as mode from analytics_events p
        where c.sessions = 0 and p.org_id = ${c.orgId} and p.user_id = (c.user_id collate "default")
          and p.type = 'session_start' and p.occurred_at < (c.day::timestamp at time zone 'UTC')
        order by p.occurred_at desc limit 1
      ) prev on true
    ) r`.execute(db);
}

// Which grouping set a breakdown row came from: grouping(tool, mcp_server, autonomy, name,
// hook_event, extension, language) with only that column's bit clear.
const SET = {
  tool: 0b0111111,
  mcp: 0b1011111,
  autonomy: 0b1101111,
  name: 0b1110111,
  hook: 0b1111011,
  extension: 0b1111101,
  language: 0b1111110,
} as const;

/** A breakdown array of the day, ordered by key (byte order), `[]` when empty. */
function breakdown(set: number, type: string, key: string, object: string, order: string): RawBuilder<unknown> {
  return sql.raw(
    `coalesce(jsonb_agg(jsonb_build_object(${object}) order by ${order}) filter (where b.g = ${set} and b.type = '${type}' and b.${key} is not null), '[]'::jsonb)`,
  );
}

const levelCount = (level: string) =>
  sql.raw(
    `coalesce(sum(b.n) filter (where b.g = ${SET.autonomy} and b.type = 'tool_call' and b.autonomy = '${level}'), 0)`,
  );

/**
 * The day rows of the days with events: totals over the user rows (with the exact autonomy-ratio
 * mean and percentiles), model totals over the per-model rows, the count breakdowns and distinct
 * sessions from pass 1, and the rendered /tokens row. Returns the number of raw events covered.
 */
async function insertDayRows(db: Executor, c: Chunk): Promise<number> {
  const days = sql`${c.days}::date[]`;
  const result = await sql<{ events: number }>`
    with ut as (
      select day, count(*) as dau, sum(events) as events, sum(tool_calls) as tool_calls,
        count(*) filter (where mcp_calls > 0) as mcp_users,
        sum(skill_calls) as skills, sum(slash_commands) as slash_commands, sum(hooks) as hooks,
        count(*) filter (where clients & ${CLIENT_BITS["terminal-ui"]} <> 0) as terminal_users,
        count(*) filter (where clients & ${CLIENT_BITS.web} <> 0) as web_users,
        count(*) filter (where clients & ${CLIENT_BITS["non-interactive-cli"]} <> 0) as cli_users,
        -- Summed in user order: a float sum depends on its order, and a recomputation must not
        -- change the last digit.
        coalesce(avg(tool_calls::float8 / user_messages order by user_id) filter (where user_messages > 0), 0) as ratio_avg,
        coalesce(percentile_cont(0.5) within group (order by tool_calls::float8 / user_messages) filter (where user_messages > 0), 0) as ratio_p50,
        coalesce(percentile_cont(0.9) within group (order by tool_calls::float8 / user_messages) filter (where user_messages > 0), 0) as ratio_p90,
        sum(sessions) as sessions, sum(messages) as messages, sum(user_messages) as user_messages,
        sum(files_created) as files_created, sum(files_edited) as files_edited,
        sum(git_commits) as git_commits, sum(git_prs_created) as git_prs_created,
        -- The day's /users rows in page order: their ETag (read/queries.ts readDayVersions).
        md5(string_agg(row_json, ',' order by user_id)) as users_md5
      from analytics_user_daily where org_id = ${c.orgId} and day = any(${days})
      group by day
    ), mt as (
      select day, round(sum(billable_tokens), 2) as billable_tokens, sum(input_tokens) as input_tokens,
        sum(output_tokens) as output_tokens, sum(cache_read_tokens) as cache_read_tokens, sum(cache_write_tokens) as cache_write_tokens
      from analytics_user_model_daily where org_id = ${c.orgId} and day = any(${days})
      group by day
    ), bm as (
      select day, json_agg(json_build_object('model_id', model_id, 'model_tier', model_tier, 'billable_tokens', billable_tokens,
          'input_tokens', input_tokens, 'output_tokens', output_tokens) order by model_id) as by_model
      from (
        select day, model_id, max(model_tier) as model_tier, round(sum(billable_tokens), 2) as billable_tokens,
          sum(input_tokens) as input_tokens, sum(output_tokens) as output_tokens
        from analytics_user_model_daily where org_id = ${c.orgId} and day = any(${days})
        group by day, model_id
      ) m
      group by day
    ), um as (
      select day, user_id, json_agg(json_build_object('model_id', model_id, 'model_tier', model_tier,
          'billable_tokens', round(billable_tokens, 2), 'input_tokens', input_tokens, 'output_tokens', output_tokens) order by model_id) as models
      from analytics_user_model_daily where org_id = ${c.orgId} and day = any(${days})
      group by day, user_id
    ), bu as (
      -- by_user: one entry per user with model usage that day, ordered by user ID.
      select u.day, json_agg(json_build_object('user_id', u.user_id, 'user_email', coalesce(u.user_email, ''),
          'billable_tokens', round(u.billable_tokens, 2), 'by_model', um.models) order by u.user_id) as by_user
      from analytics_user_daily u join um on um.day = u.day and um.user_id = u.user_id
      where u.org_id = ${c.orgId} and u.day = any(${days})
      group by u.day
    ), b as (
      select b.day,
        ${breakdown(SET.tool, "tool_call", "tool", "'tool', b.tool, 'invocations', b.n", "b.tool")} as by_tool,
        ${breakdown(SET.mcp, "tool_call", "mcp_server", "'server', b.mcp_server, 'invocations', b.n", "b.mcp_server")} as mcp_by_server,
        ${breakdown(SET.name, "skill", "name", "'name', b.name, 'count', b.n", "b.name")} as skills_by_name,
        ${breakdown(SET.name, "slash_command", "name", "'name', b.name, 'count', b.n", "b.name")} as slash_commands_by_name,
        ${breakdown(
          SET.hook,
          "hook",
          "hook_event",
          "'event', b.hook_event, 'matcher', coalesce(b.hook_matcher, ''), 'command', coalesce(b.hook_command, ''), 'count', b.n",
          "b.hook_event, b.hook_matcher, b.hook_command",
        )} as hooks_by_event,
        ${breakdown(SET.extension, "file_op", "extension", "'extension', b.extension, 'count', b.n", "b.extension")} as by_extension,
        ${breakdown(SET.language, "file_op", "language", "'language', b.language, 'count', b.n", "b.language")} as by_language,
        ${levelCount("auto-high")} as auto_high, ${levelCount("auto-medium")} as auto_medium,
        ${levelCount("auto-low")} as auto_low, ${levelCount("manual")} as manual
      from (
        -- Pass 1's event groups counted by each breakdown key.
        select day, type, tool, mcp_server, autonomy, name, hook_event, hook_matcher, hook_command, extension, language,
          sum(n) as n, grouping(tool, mcp_server, autonomy, name, hook_event, extension, language) as g
        from ${GROUPS}
        where g = ${EVENT_ROWS} and type in ('tool_call', 'skill', 'slash_command', 'hook', 'file_op')
        group by grouping sets ((day, type, tool), (day, type, mcp_server), (day, type, autonomy), (day, type, name),
          (day, type, hook_event, hook_matcher, hook_command), (day, type, extension), (day, type, language))
      ) b
      group by b.day
    ), ss as (
      -- Distinct session_ids seen on the day (any event type): the per-session averages' divisor.
      select day, count(*) as n from ${GROUPS} where g = ${SESSION_ROWS} and session_id is not null group by day
    ), cx as (
      -- /code: lines and edit decisions per day, user and language ('' for events without one).
      select day, code_user, coalesce(language, '') as language,
        coalesce(sum(lines_added), 0) as lines_added, coalesce(sum(lines_removed), 0) as lines_removed,
        coalesce(sum(n) filter (where type = 'edit_decision' and decision = 'accept'), 0) as edits_accepted,
        coalesce(sum(n) filter (where type = 'edit_decision' and decision = 'reject'), 0) as edits_rejected
      from ${GROUPS}
      where g = ${EVENT_ROWS} and code_user is not null
      group by day, code_user, coalesce(language, '')
    ), code as (
      select day, sum(lines_added) as lines_added, sum(lines_removed) as lines_removed,
        sum(edits_accepted) as edits_accepted, sum(edits_rejected) as edits_rejected
      from cx group by day
    ), cl as (
      select day, jsonb_agg(jsonb_build_object('language', language, 'lines_added', lines_added, 'lines_removed', lines_removed,
          'edits_accepted', edits_accepted, 'edits_rejected', edits_rejected) order by language) as by_language
      from (
        select day, language, sum(lines_added) as lines_added, sum(lines_removed) as lines_removed,
          sum(edits_accepted) as edits_accepted, sum(edits_rejected) as edits_rejected
        from cx group by day, language
      ) l
      group by day
    ), cu as (
      select x.day, jsonb_agg(jsonb_build_object('user_id', x.code_user, 'user_email', coalesce(u.user_email, ''),
          'lines_added', x.lines_added, 'lines_removed', x.lines_removed,
          'edits_accepted', x.edits_accepted, 'edits_rejected', x.edits_rejected) order by x.code_user) as by_user
      from (
        select day, code_user, sum(lines_added) as lines_added, sum(lines_removed) as lines_removed,
          sum(edits_accepted) as edits_accepted, sum(edits_rejected) as edits_rejected
        from cx group by day, code_user
      ) x
      left join analytics_user_daily u on u.org_id = ${c.orgId} and u.day = x.day and u.user_id = x.code_user
      group by x.day
    ), cost as (
      -- /costs: in US dollars, rounded to millionths (each entry and each total on its own).
      select day, round(sum(cost_usd), 6) as cost_usd, round(sum(reported_cost_usd), 6) as reported_cost_usd,
        sum(unpriced_tokens) as unpriced_tokens
      from analytics_user_model_daily where org_id = ${c.orgId} and day = any(${days})
      group by day
    ), costm as (
      select day, jsonb_agg(jsonb_build_object('model_id', model_id, 'cost_usd', round(cost_usd, 6)::float8,
          'reported_cost_usd', round(reported_cost_usd, 6)::float8, 'unpriced_tokens', unpriced_tokens) order by model_id) as by_model
      from (
        select day, model_id, sum(cost_usd) as cost_usd, sum(reported_cost_usd) as reported_cost_usd, sum(unpriced_tokens) as unpriced_tokens
        from analytics_user_model_daily where org_id = ${c.orgId} and day = any(${days})
        group by day, model_id
      ) m
      group by day
    ), costu as (
      select m.day, jsonb_agg(jsonb_build_object('user_id', m.user_id, 'user_email', coalesce(u.user_email, ''),
          'cost_usd', round(m.cost_usd, 6)::float8, 'reported_cost_usd', round(m.reported_cost_usd, 6)::float8,
          'unpriced_tokens', m.unpriced_tokens) order by m.user_id) as by_user
      from (
        select day, user_id, sum(cost_usd) as cost_usd, sum(reported_cost_usd) as reported_cost_usd, sum(unpriced_tokens) as unpriced_tokens
        from analytics_user_model_daily where org_id = ${c.orgId} and day = any(${days})
        group by day, user_id
      ) m
      left join analytics_user_daily u on u.org_id = ${c.orgId} and u.day = m.day and u.user_id = m.user_id
      group by m.day
    )
    insert into analytics_daily (org_id, day, events,
      billable_tokens, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, by_model,
      tool_calls, by_tool, mcp_users_with_mcp, mcp_by_server, skills_invocations, skills_by_name,
      slash_commands_invocations, slash_commands_by_name, hooks_invocations, hooks_by_event, web_users,
      autonomy_ratio_avg, autonomy_ratio_p50, autonomy_ratio_p90, distinct_sessions,
      tool_calls_auto_high, tool_calls_auto_medium, tool_calls_auto_low, tool_calls_manual,
      daily_active_users, daily_active_users_by_client, sessions, messages, user_messages,
      files_created, files_edited, by_extension, by_language, git_commits, git_prs_created, tokens_json, tokens_md5, users_md5,
      lines_added, lines_removed, edits_accepted, edits_rejected, code_by_language, code_by_user,
      cost_usd, reported_cost_usd, unpriced_tokens, costs_by_model, costs_by_user)
    select ${c.orgId}, t.day, t.events,
      t.billable_tokens, t.input_tokens, t.output_tokens, t.cache_read_tokens, t.cache_write_tokens, t.by_model::jsonb,
      t.tool_calls, coalesce(b.by_tool, '[]'), t.mcp_users, coalesce(b.mcp_by_server, '[]'), t.skills, coalesce(b.skills_by_name, '[]'),
      t.slash_commands, coalesce(b.slash_commands_by_name, '[]'), t.hooks, coalesce(b.hooks_by_event, '[]'), t.web_users,
      t.ratio_avg, t.ratio_p50, t.ratio_p90, coalesce(ss.n, 0),
      coalesce(b.auto_high, 0), coalesce(b.auto_medium, 0), coalesce(b.auto_low, 0), coalesce(b.manual, 0),
      t.dau, jsonb_strip_nulls(jsonb_build_object('terminal-ui', nullif(t.terminal_users, 0), 'web', nullif(t.web_users, 0),
        'non-interactive-cli', nullif(t.cli_users, 0))),
      t.sessions, t.messages, t.user_messages,
      t.files_created, t.files_edited, coalesce(b.by_extension, '[]'), coalesce(b.by_language, '[]'), t.git_commits, t.git_prs_created,
      t.tokens_json, md5(t.tokens_json), t.users_md5,
      coalesce(code.lines_added, 0), coalesce(code.lines_removed, 0), coalesce(code.edits_accepted, 0), coalesce(code.edits_rejected, 0),
      coalesce(cl.by_language, '[]'), coalesce(cu.by_user, '[]'),
      coalesce(cost.cost_usd, 0), coalesce(cost.reported_cost_usd, 0), coalesce(cost.unpriced_tokens, 0),
      coalesce(costm.by_model, '[]'), coalesce(costu.by_user, '[]')
    from (
      select ut.*, coalesce(mt.billable_tokens, 0) as billable_tokens, coalesce(mt.input_tokens, 0) as input_tokens,
        coalesce(mt.output_tokens, 0) as output_tokens, coalesce(mt.cache_read_tokens, 0) as cache_read_tokens,
        coalesce(mt.cache_write_tokens, 0) as cache_write_tokens, coalesce(bm.by_model, '[]'::json) as by_model,
        -- The day's /tokens row (docs/interface.md §2.2) as the API prints it.
        json_build_object('date', ut.day, 'billable_tokens', coalesce(mt.billable_tokens, 0), 'input_tokens', coalesce(mt.input_tokens, 0),
          'output_tokens', coalesce(mt.output_tokens, 0), 'cache_read_tokens', coalesce(mt.cache_read_tokens, 0),
          'cache_write_tokens', coalesce(mt.cache_write_tokens, 0), 'by_model', coalesce(bm.by_model, '[]'::json),
          'by_user', coalesce(bu.by_user, '[]'::json))::text as tokens_json
      from ut
      left join mt on mt.day = ut.day
      left join bm on bm.day = ut.day
      left join bu on bu.day = ut.day
    ) t
    left join b on b.day = t.day
    left join ss on ss.day = t.day
    left join code on code.day = t.day
    left join cl on cl.day = t.day
    left join cu on cu.day = t.day
    left join cost on cost.day = t.day
    left join costm on costm.day = t.day
    left join costu on costu.day = t.day
    returning events`.execute(db);
  return result.rows.reduce((sum, r) => sum + Number(r.events), 0);
}

// The rollup's last step for /tokens: each recomputed day's rendered row, printed compactly and
// compressed once (migration 0010), so requests that take deflate send stored bytes
// (platform/deflate-parts.ts).
/** Compresses the rendered /tokens rows of these days that are not compressed yet. */
async function compressTokensRows(db: Executor, orgId: string, days: readonly string[]): Promise<void> {
  // One day at a time: a large organization's day is megabytes of text.
  for (const day of days) {
    const { rows } = await sql<{ tokens_json: string }>`
      select tokens_json from analytics_daily
      where org_id = ${orgId} and day = ${day}::date and tokens_json is not null and tokens_deflate is null`.execute(
      db,
    );
    const rendered = rows[0]?.tokens_json;
    if (rendered === undefined) continue;
    // Printed again as the edge prints JSON: Postgres' json_build_object/json_agg write " : " and
    // ", " and numerics keep trailing zeros; the same values, a tenth fewer bytes.
    const text = JSON.stringify(JSON.parse(rendered));
    const part = deflatePart(text);
    await sql`
      update analytics_daily set tokens_json = ${text}, tokens_md5 = md5(${text}::text),
        tokens_deflate = ${part.deflated}, tokens_adler32 = ${part.adler32}, tokens_crc32 = ${part.crc32}, tokens_bytes = ${part.length}
      where org_id = ${orgId} and day = ${day}::date`.execute(db);
  }
}

/** Recomputes (organization, each of the days); returns the number of raw events they cover. */
export async function rollupDays(db: Transaction<Database>, orgId: string, days: readonly string[]): Promise<number> {
  if (days.length === 0) return 0;
  const c = chunkOf(orgId, days);
  // The aggregate tables were written moments ago in this transaction, so the planner's row
  // estimates for them are stale (often 1), which makes it choose nested loops that re-aggregate
  // per outer row. Apart from the per-day laterals (which must nest), every join here is a bulk
  // join: hash joins are always the right plan. JIT compilation (triggered by those inflated
  // costs) took longer than the queries themselves. The aggregates of a chunk's days hash in
  // memory with a larger work_mem (this transaction only).
  await sql`set local enable_nestloop = off`.execute(db);
  await sql`set local jit = off`.execute(db);
  await sql`set local work_mem = '64MB'`.execute(db);
  // A background batch: a pass over a large organization's week may outlast the statement
  // timeout meant for requests.
  await sql`set local statement_timeout = '10min'`.execute(db);
  await clearDays(db, c);
  // The two passes read whole days of a partition: a bitmap scan reads each page once, while
  // the index scan the planner prefers (the index is well correlated) revisits the page for
  // every row, twice the time. Index scans come back for the rest: the delegation fallback finds
  // a user's latest earlier session start with a backward index scan that stops at the first.
  await sql`set local enable_indexscan = off`.execute(db);
  await collectGroups(db, c);
  await aggregateUsers(db, c);
  await sql`set local enable_indexscan = on`.execute(db);
  await insertUserModelRows(db, c);
  await insertUserRows(db, c);
  const events = await insertDayRows(db, c);
  await compressTokensRows(db, orgId, c.days);
  await sql`delete from analytics_pending_days where org_id = ${orgId} and day = any(${c.days}::date[])`.execute(db);
  return events;
}
