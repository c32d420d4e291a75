// sessionSettings: validating the request fields of a PATCH or CreateSession body (docs/interface.md §2.8)
// into what is stored, and merging them ("a field present replaces the stored one").
//
// List and map fields arrive as Struct/ListValue (so "absent" and "empty" differ); any JSON fits
// those, so their items are checked here and a 400 names the exact JSON path that is wrong.
import { toJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { ListValueSchema } from "@bufbuild/protobuf/wkt";
import type { SessionSettingsUpdate } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { invalidArgument } from "../platform/errors.js";
import { firstTooDeep } from "../platform/json-nesting.js";
import type { SessionRow, StoredSettings, StoredTokenUsage } from "./tables.js";

export const SETTINGS_LIMITS = {
  stringChars: 256,
  tags: 100,
  tagNameChars: 100,
  tagMetadataBytes: 8 * 1024,
  // Objects and arrays nested at most this deep in a tag's metadata (the metadata object is level
  // 1). Each level is a google.protobuf.Struct, a map entry and a Value (a ListValue and a Value
  // for an array): 32 levels under ListSessionsResponse > SessionListItem > SessionSettings >
  // SessionTag make 99 nested messages, and 100 length-delimited fields with a string at the
  // bottom, within the default limit of 100 of every protobuf reader that counts them (Java's and
  // upb's CodedInputStream count map entries; the C++ JSON printer Envoy's transcoder uses counts
  // every length-delimited field). One level more and some reader fails every read of the session.
  tagMetadataDepth: 32,
  toolIds: 500,
  toolIdChars: 200,
  children: 1000,
} as const;

export const TOKEN_USAGE_KEYS = [
  "inputTokens",
  "outputTokens",
  "cacheCreationTokens",
  "cacheReadTokens",
  "thinkingTokens",
  "factoryCredits",
] as const satisfies readonly (keyof StoredTokenUsage)[];

export const ZERO_USAGE: StoredTokenUsage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheCreationTokens: 0,
  cacheReadTokens: 0,
  thinkingTokens: 0,
  factoryCredits: 0,
});

const isObject = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

function shortString(path: string, value: string, max: number = SETTINGS_LIMITS.stringChars): string {
  if (value.length > max) throw invalidArgument(path, `must be at most ${max} characters, got ${value.length}`);
  return value;
}

function typeOf(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`;
}

function parseTags(path: string, items: JsonValue[]): NonNullable<StoredSettings["tags"]> {
  if (items.length > SETTINGS_LIMITS.tags)
    throw invalidArgument(path, `must have at most ${SETTINGS_LIMITS.tags} items, got ${items.length}`);
  return items.map((item, i) => {
    const at = `${path}[${i}]`;
    if (!isObject(item)) throw invalidArgument(at, `must be an object {name, metadata}, got ${typeOf(item)}`);
    for (const key of Object.keys(item)) {
      if (key !== "name" && key !== "metadata")
        throw invalidArgument(`${at}.${key}`, "is not a tag field (name, metadata)");
    }
    if (typeof item.name !== "string")
      throw invalidArgument(`${at}.name`, `must be a string, got ${typeOf(item.name)}`);
    if (item.name.length === 0) throw invalidArgument(`${at}.name`, "must not be empty");
    shortString(`${at}.name`, item.name, SETTINGS_LIMITS.tagNameChars);
    if (item.metadata === undefined) return { name: item.name };
    if (!isObject(item.metadata))
      throw invalidArgument(`${at}.metadata`, `must be an object, got ${typeOf(item.metadata)}`);
    if (firstTooDeep(item.metadata, SETTINGS_LIMITS.tagMetadataDepth)) {
      throw invalidArgument(
        `${at}.metadata`,
        `must nest objects and arrays at most ${SETTINGS_LIMITS.tagMetadataDepth} levels deep (the metadata object is level 1); deeper values cannot be read by protobuf clients`,
      );
    }
    const bytes = Buffer.byteLength(JSON.stringify(item.metadata));
    if (bytes > SETTINGS_LIMITS.tagMetadataBytes)
      throw invalidArgument(
        `${at}.metadata`,
        `must be at most ${SETTINGS_LIMITS.tagMetadataBytes} bytes of JSON, got ${bytes}`,
      );
    return { name: item.name, metadata: item.metadata };
  });
}

function parseStringList(path: string, items: JsonValue[]): string[] {
  if (items.length > SETTINGS_LIMITS.toolIds)
    throw invalidArgument(path, `must have at most ${SETTINGS_LIMITS.toolIds} items, got ${items.length}`);
  return items.map((item, i) => {
    if (typeof item !== "string") throw invalidArgument(`${path}[${i}]`, `must be a string, got ${typeOf(item)}`);
    if (item.length === 0) throw invalidArgument(`${path}[${i}]`, "must not be empty");
    return shortString(`${path}[${i}]`, item, SETTINGS_LIMITS.toolIdChars);
  });
}

/** A TokenUsage-shaped JSON object: the six counters, each a number ≥ 0; missing ones are 0. */
export function parseTokenUsage(path: string, value: unknown): StoredTokenUsage {
  if (!isObject(value)) throw invalidArgument(path, `must be an object of token counts, got ${typeOf(value)}`);
  const usage: StoredTokenUsage = { ...ZERO_USAGE };
  for (const [key, n] of Object.entries(value)) {
    if (!(TOKEN_USAGE_KEYS as readonly string[]).includes(key)) {
      throw invalidArgument(`${path}.${key}`, `is not a token usage field (${TOKEN_USAGE_KEYS.join(", ")})`);
    }
    if (typeof n !== "number" || !Number.isFinite(n))
      throw invalidArgument(`${path}.${key}`, `must be a number, got ${typeOf(n)}`);
    if (n < 0) throw invalidArgument(`${path}.${key}`, `must be 0 or more, got ${n}`);
    usage[key as keyof StoredTokenUsage] = n;
  }
  return usage;
}

function parseChildUsage(path: string, value: JsonObject): Record<string, StoredTokenUsage> {
  const entries = Object.entries(value);
  if (entries.length > SETTINGS_LIMITS.children)
    throw invalidArgument(path, `must have at most ${SETTINGS_LIMITS.children} entries, got ${entries.length}`);
  const out: Record<string, StoredTokenUsage> = {};
  for (const [sessionId, usage] of entries) {
    if (sessionId.length === 0) throw invalidArgument(path, "session IDs must not be empty");
    shortString(`${path}.${sessionId.slice(0, 40)}`, sessionId, 200);
    out[sessionId] = parseTokenUsage(`${path}.${sessionId}`, usage);
  }
  return out;
}

/**
 * The fields present in `update`, validated; `path` is the JSON path of the settings object in
 * the request ("sessionSettings"). Absent fields are absent from the result.
 */
export function parseSettingsUpdate(
  update: SessionSettingsUpdate | undefined,
  path = "sessionSettings",
): StoredSettings {
  const out: StoredSettings = {};
  if (!update) return out;
  if (update.model !== undefined) out.model = shortString(`${path}.model`, update.model);
  if (update.specModeModel !== undefined)
    out.specModeModel = shortString(`${path}.specModeModel`, update.specModeModel);
  if (update.providerLockTimestamp !== undefined) {
    out.providerLockTimestamp = shortString(`${path}.providerLockTimestamp`, update.providerLockTimestamp, 64);
  }
  if (update.assistantActiveTimeMs !== undefined) {
    const ms = update.assistantActiveTimeMs;
    if (!Number.isFinite(ms) || ms < 0)
      throw invalidArgument(`${path}.assistantActiveTimeMs`, `must be a number of milliseconds ≥ 0, got ${ms}`);
    out.assistantActiveTimeMs = ms;
  }
  if (update.archivedAt !== undefined) out.archivedAt = shortString(`${path}.archivedAt`, update.archivedAt, 64);
  if (update.childInclusiveTokenUsageBySessionId !== undefined) {
    out.childInclusiveTokenUsageBySessionId = parseChildUsage(
      `${path}.childInclusiveTokenUsageBySessionId`,
      update.childInclusiveTokenUsageBySessionId,
    );
  }
  if (update.tags !== undefined)
    out.tags = parseTags(`${path}.tags`, toJson(ListValueSchema, update.tags) as JsonValue[]);
  if (update.enabledToolIds !== undefined) {
    out.enabledToolIds = parseStringList(
      `${path}.enabledToolIds`,
      toJson(ListValueSchema, update.enabledToolIds) as JsonValue[],
    );
  }
  if (update.disabledToolIds !== undefined) {
    out.disabledToolIds = parseStringList(
      `${path}.disabledToolIds`,
      toJson(ListValueSchema, update.disabledToolIds) as JsonValue[],
    );
  }
  return out;
}

/** PATCH semantics: every field present in `patch` replaces the stored one; the rest stay. */
export function mergeSettings(stored: StoredSettings, patch: StoredSettings): StoredSettings {
  return { ...stored, ...patch };
}

// childInclusiveTokenUsageBySessionId as a client writes it (PATCH, CreateSession): the inclusive
// usage of children the client ran itself, which this service does not hold. A key naming a
// session the service does hold in the organization would count usage twice: the session's own
// ID adds the session to itself, a held child is already counted from its stored usage, and an
// ancestor (or any other session of the tree) already includes this session, so the ancestor's
// inclusive usage would include itself. A session of another tree is counted in its own tree.
// Keys naming no session of the organization are kept as given; another organization's session
// IDs are among them (the service does not tell those apart from client-side IDs).

/**
 * Throws a 400 naming the first key of `reported` that is a session of the organization; `held`
 * are the sessions among its keys (findSessionsAmong).
 */
export function refuseHeldSessions(
  sessionId: string,
  reported: Readonly<Record<string, StoredTokenUsage>> | undefined,
  held: readonly Pick<SessionRow, "id" | "parent_session_id">[],
  path = "sessionSettings.childInclusiveTokenUsageBySessionId",
): void {
  if (held.length === 0) return;
  const keys = Object.keys(reported ?? {});
  const parentOf = new Map(held.map((r) => [r.id, r.parent_session_id]));
  const key = keys.find((k) => parentOf.has(k))!;
  if (key === sessionId)
    throw invalidArgument(`${path}.${key}`, "is this session's own ID; its usage is tokenUsage, not a child's");
  if (parentOf.get(key) === sessionId)
    throw invalidArgument(`${path}.${key}`, "is a child session this service tracks; its usage cannot be reported");
  throw invalidArgument(
    `${path}.${key}`,
    "is a session this service holds and not a child of this one (its parent, an ancestor or an unrelated session); only children run outside this service can be reported",
  );
}
