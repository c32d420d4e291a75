// `agentplane ingest FILE.jsonl|-`, `agentplane rollup [--date D | --from D --to D] [--org ID]`,
// `agentplane multiplier set|unset|list` and `agentplane price set|list|remove`: the same
// validation, storage and rollup as the
// TelemetryService RPCs, straight against the database (docs/telemetry.md).
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { TelemetryEventSchema } from "../../gen/agentplane/analytics/v1/analytics_pb.js";
import { addDays, dayOf } from "../analytics/dates.js";
import type { IncomingEvent } from "../analytics/ingest/events.js";
import { ingestEvents } from "../analytics/ingest/ingest.js";
import {
  listCreditMultipliers,
  listModelPrices,
  type ModelPrice,
  removeCreditMultiplier,
  removeModelPrice,
  setCreditMultiplier,
  setModelPrice,
} from "../analytics/rollup/days.js";
import { parseRollupRange, rollupRange } from "../analytics/rollup/rollup.js";
import { DomainError } from "../platform/errors.js";
import type { Command, CommandContext } from "./commands.js";
import { withDatabase } from "./database.js";
import { UsageError } from "./output.js";

/** Lines per ingest call: one transaction and a few multi-row statements each. */
const BATCH_LINES = 5_000;
/** Rejections listed in the answer (all are counted). */
const MAX_LISTED = 1_000;

interface LineRejection {
  line: number;
  reason: string;
}

/** Parses one JSONL line into an event (snake_case or camelCase keys), or says why it cannot. */
function parseLine(text: string): { event: IncomingEvent } | { reason: string } {
  let json: JsonValue;
  try {
    json = JSON.parse(text) as JsonValue;
  } catch (err) {
    return { reason: `not valid JSON: ${(err as Error).message}` };
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) return { reason: "must be a JSON object" };
  try {
    return { event: fromJson(TelemetryEventSchema, json) };
  } catch (err) {
    // "cannot decode message agentplane.analytics.v1.TelemetryEvent from JSON: key "x" is unknown"
    return { reason: (err as Error).message.replace(/^cannot decode message [\w.]+ from JSON: /, "") };
  }
}

const ingest: Command = {
  words: 1,
  quiet: true,
  options: [],
  usage: "FILE.jsonl|-",
  summary:
    "load telemetry events, one JSON object a line (docs/telemetry.md; - reads stdin); reports accepted, duplicate and rejected counts, and each rejected line's number and reason",
  run: async (ctx) => {
    const [file, ...extra] = ctx.args;
    if (!file) throw new UsageError("ingest needs a file of JSON lines: agentplane ingest FILE.jsonl (- reads stdin)");
    if (extra.length > 0) throw new UsageError(`ingest takes one file, got also ${extra.join(" ")}`);
    const input = file === "-" ? process.stdin : createReadStream(file);
    const opened = new Promise<void>((resolve, reject) => {
      if (file === "-") return resolve();
      input.once("open", () => resolve());
      input.once("error", (err: NodeJS.ErrnoException) =>
        reject(new Error(`cannot read ${file}: ${err.code ?? err.message}`)),
      );
    });
    await opened;
    await withDatabase(ctx.config, ctx.logger, async ({ db }) => {
      const totals = { events: 0, accepted: 0, duplicates: 0, rejected: 0 };
      const listed: LineRejection[] = [];
      const reject = (r: LineRejection) => {
        totals.rejected++;
        if (listed.length < MAX_LISTED) listed.push(r);
      };
      let events: IncomingEvent[] = [];
      let lines: number[] = [];
      const flush = async () => {
        if (events.length === 0) return;
        const result = await ingestEvents(db, events);
        totals.accepted += result.accepted;
        totals.duplicates += result.duplicates;
        for (const r of result.rejected) reject({ line: lines[r.index]!, reason: r.reason });
        events = [];
        lines = [];
      };
      let n = 0;
      for await (const text of createInterface({ input, crlfDelay: Infinity })) {
        n++;
        if (text.trim() === "") continue;
        totals.events++;
        const parsed = parseLine(text);
        if ("reason" in parsed) reject({ line: n, reason: parsed.reason });
        else {
          events.push(parsed.event);
          lines.push(n);
        }
        if (events.length >= BATCH_LINES) await flush();
      }
      await flush();
      listed.sort((a, b) => a.line - b.line);
      const summary = `accepted ${totals.accepted}, duplicates ${totals.duplicates}, rejected ${totals.rejected} (of ${totals.events} events)`;
      const details = listed.map((r) => `line ${r.line}: ${r.reason}`);
      if (totals.rejected > listed.length) details.push(`… and ${totals.rejected - listed.length} more rejections`);
      ctx.out.result({ ...totals, rejections: listed }, [summary, ...details].join("\n"));
    });
  },
};

function dayOption(ctx: CommandContext, name: string): string | undefined {
  const v = ctx.options[name];
  return typeof v === "string" ? v.trim() : undefined;
}

const rollup: Command = {
  words: 1,
  quiet: true,
  options: ["date", "from", "to", "org"],
  usage: "[--date D | --from D --to D] [--org ID]",
  summary:
    "recompute the daily analytics aggregates of a day or a range of days (default: yesterday), for every organization or one",
  run: async (ctx) => {
    if (ctx.args.length > 0) throw new UsageError(`rollup takes no arguments, got ${ctx.args.join(" ")}`);
    const date = dayOption(ctx, "date");
    const from = dayOption(ctx, "from");
    const to = dayOption(ctx, "to");
    if (date !== undefined && (from !== undefined || to !== undefined))
      throw new UsageError("give either --date D or --from D --to D, not both");
    if ((from === undefined) !== (to === undefined)) throw new UsageError("--from and --to go together");
    const yesterday = addDays(dayOf(Date.now()), -1);
    let range: { from: string; to: string };
    try {
      range =
        date !== undefined
          ? parseRollupRange(date, date, yesterday, { from: "--date", to: "--date" })
          : parseRollupRange(from ?? yesterday, to ?? yesterday, yesterday, { from: "--from", to: "--to" });
    } catch (err) {
      throw err instanceof DomainError ? new UsageError(err.message) : err;
    }
    const orgId = typeof ctx.options.org === "string" ? ctx.options.org.trim() : undefined;
    await withDatabase(ctx.config, ctx.logger, async ({ db }) => {
      const started = Date.now();
      const stats = await rollupRange(db, { ...range, orgId }, { through: yesterday, logger: ctx.logger });
      const ms = Date.now() - started;
      ctx.out.result(
        { from: range.from, to: range.to, ...(orgId ? { orgId } : {}), days: stats.days, events: stats.events, ms },
        `rolled up ${stats.days} day(s) ${range.from}..${range.to}${orgId ? ` for ${orgId}` : ""}: ${stats.events} events in ${ms} ms`,
      );
    });
  },
};

const multiplierSet: Command = {
  words: 2,
  quiet: true,
  options: [],
  usage: "MODEL_ID M",
  summary: "set a model's credit multiplier, a number >= 0 (applies to days rolled up from then on)",
  run: async (ctx) => {
    const [modelId, value, ...extra] = ctx.args;
    if (!modelId || value === undefined || extra.length > 0)
      throw new UsageError("usage: agentplane multiplier set MODEL_ID MULTIPLIER");
    const multiplier = Number(value);
    if (!/^\d+(\.\d+)?$/.test(value) || !Number.isFinite(multiplier))
      throw new UsageError(`MULTIPLIER must be a number >= 0, got "${value}"`);
    await withDatabase(ctx.config, ctx.logger, async ({ db }) => {
      await setCreditMultiplier(db, modelId, multiplier);
      ctx.out.result(
        { modelId, multiplier },
        `credit multiplier of ${modelId} set to ${multiplier} (applies to days rolled up from now on)`,
      );
    });
  },
};

const multiplierUnset: Command = {
  words: 2,
  quiet: true,
  options: [],
  usage: "MODEL_ID",
  summary: "remove a model's credit multiplier (back to 1)",
  run: async (ctx) => {
    const [modelId, ...extra] = ctx.args;
    if (!modelId || extra.length > 0) throw new UsageError("usage: agentplane multiplier unset MODEL_ID");
    await withDatabase(ctx.config, ctx.logger, async ({ db }) => {
      const removed = await removeCreditMultiplier(db, modelId);
      ctx.out.result(
        { modelId, removed },
        removed ? `credit multiplier of ${modelId} removed (back to 1)` : `${modelId} had no multiplier`,
      );
    });
  },
};

const multiplierList: Command = {
  words: 2,
  quiet: true,
  options: [],
  usage: "",
  summary: "list the credit multipliers (a model not listed counts 1)",
  run: (ctx) =>
    withDatabase(ctx.config, ctx.logger, async ({ db }) => {
      const rows = await listCreditMultipliers(db);
      ctx.out.result(
        { multipliers: rows },
        rows.length === 0
          ? "no credit multipliers (every model counts 1)"
          : rows.map((r) => `${r.model_id}\t${r.multiplier}`).join("\n"),
      );
    }),
};

/** The options of `price set`, each the price field it sets (US dollars per million tokens). */
const PRICE_OPTIONS = [
  ["input", "input_per_million"],
  ["output", "output_per_million"],
  ["cache-read", "cache_read_per_million"],
  ["cache-write", "cache_write_per_million"],
] as const;

const PRICE_SET_USAGE =
  "usage: agentplane price set MODEL_ID --input USD --output USD --cache-read USD --cache-write USD (per million tokens)";

const priceSet: Command = {
  words: 2,
  quiet: true,
  options: PRICE_OPTIONS.map(([option]) => option),
  usage: "MODEL_ID --input USD --output USD --cache-read USD --cache-write USD",
  summary: "set a model's price in US dollars per million tokens, for /costs (applies to days rolled up from then on)",
  run: async (ctx) => {
    const [modelId, ...extra] = ctx.args;
    if (!modelId || extra.length > 0) throw new UsageError(PRICE_SET_USAGE);
    if (modelId.length > 256) throw new UsageError("MODEL_ID must be at most 256 characters");
    const price = { model_id: modelId } as ModelPrice;
    for (const [option, field] of PRICE_OPTIONS) {
      const value = ctx.options[option];
      if (typeof value !== "string") throw new UsageError(`--${option} is required; ${PRICE_SET_USAGE}`);
      // Plain decimals only (no exponent, sign or hex): a price is typed by a person.
      if (!/^\d+(\.\d+)?$/.test(value.trim()))
        throw new UsageError(`--${option} must be a number of US dollars per million tokens >= 0, got "${value}"`);
      price[field] = Number(value);
    }
    await withDatabase(ctx.config, ctx.logger, async ({ db }) => {
      await setModelPrice(db, price);
      ctx.out.result(
        { modelId, ...Object.fromEntries(PRICE_OPTIONS.map(([, f]) => [f, price[f]])) },
        `price of ${modelId} set (per million tokens: input $${price.input_per_million}, output $${price.output_per_million}, ` +
          `cache read $${price.cache_read_per_million}, cache write $${price.cache_write_per_million}); ` +
          "applies to days rolled up from now on (agentplane rollup --from D --to D for past days)",
      );
    });
  },
};

const priceRemove: Command = {
  words: 2,
  quiet: true,
  options: [],
  usage: "MODEL_ID",
  summary: "remove a model's price",
  run: async (ctx) => {
    const [modelId, ...extra] = ctx.args;
    if (!modelId || extra.length > 0) throw new UsageError("usage: agentplane price remove MODEL_ID");
    await withDatabase(ctx.config, ctx.logger, async ({ db }) => {
      const removed = await removeModelPrice(db, modelId);
      ctx.out.result(
        { modelId, removed },
        removed
          ? `price of ${modelId} removed (its usage without a reported cost is unpriced from the next rollup)`
          : `${modelId} had no price`,
      );
    });
  },
};

const priceList: Command = {
  words: 2,
  quiet: true,
  options: [],
  usage: "",
  summary: "list the model prices",
  run: (ctx) =>
    withDatabase(ctx.config, ctx.logger, async ({ db }) => {
      const rows = await listModelPrices(db);
      ctx.out.result(
        { prices: rows },
        rows.length === 0
          ? "no model prices (usage without a client-reported cost is unpriced)"
          : [
              "model\tinput\toutput\tcache_read\tcache_write (USD per million tokens)",
              ...rows.map(
                (r) =>
                  `${r.model_id}\t${r.input_per_million}\t${r.output_per_million}\t${r.cache_read_per_million}\t${r.cache_write_per_million}`,
              ),
            ].join("\n"),
      );
    }),
};

export const ANALYTICS_COMMANDS: Record<string, Command> = {
  ingest,
  rollup,
  "multiplier set": multiplierSet,
  "multiplier unset": multiplierUnset,
  "multiplier list": multiplierList,
  "price set": priceSet,
  "price remove": priceRemove,
  "price list": priceList,
};
