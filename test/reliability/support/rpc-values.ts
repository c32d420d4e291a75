// Field values for generated RPC requests, in protobuf JSON form: per field a value the service
// should accept (real IDs of the seeded organization where the field names one, so that requests
// get past validation into the database), and per protobuf type the hostile ones (boundary
// numbers, NaN and the infinities, huge, empty, control-character and lone-surrogate strings).
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import {
  AUTONOMY_LEVELS,
  AUTONOMY_MODES,
  CLIENTS,
  EDIT_DECISIONS,
  EVENT_TYPES,
  FILE_OPS,
  MODEL_TIERS,
} from "../../../services/analytics/ingest/events.js";
import { EARLIEST, WEBHOOK_URL } from "./endpoints.js";
import { BOUNDARY_NUMBERS, hostileString } from "./fuzz-values.js";
import type { RpcWorld } from "./rpc-setup.js";

const DAY_MS = 86_400_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const pastDay = fc.integer({ min: Date.parse(EARLIEST), max: Date.now() - DAY_MS }).map(dayOf);
const yesterday = fc.constant(null).map(() => dayOf(Date.now() - DAY_MS));
const recentTime = fc
  .integer({ min: Date.now() - 20 * DAY_MS, max: Date.now() - DAY_MS })
  .map((ms) => new Date(ms).toISOString());
const word = fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/);
const text = fc.oneof(
  word,
  fc.string({ minLength: 1, maxLength: 60 }).filter((s) => s.trim() !== "" && !s.includes("\u0000")),
);
const freshName = fc.constant(null).map(() => `fuzz-${randomUUID().slice(0, 13)}`);
// The smallest PNG there is (1×1, transparent).
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";

/**
 * Valid values by field: "Message.field" (the message's short name and the field's localName)
 * first, then the field's localName alone. A field with neither gets a plain value of its type.
 * Values are in protobuf JSON form; strings given for number fields are converted.
 */
export function validPools(w: RpcWorld): Record<string, fc.Arbitrary<unknown>> {
  const o = w.org;
  const members = Object.values(o.members);
  const leases = Object.values(w.leases).flat();
  const sessionIds = [...Object.values(o.sessions), ...leases.map((l) => l.sessionId)];
  const date = fc.oneof(pastDay, yesterday);
  return {
    orgId: fc.constant(o.orgId),
    userId: fc.constantFrom(...members.map((m) => m.userId)),
    sessionId: fc.constantFrom(...sessionIds),
    parentSessionId: fc.constantFrom(...sessionIds),
    messageId: fc.constantFrom(...Object.values(o.messages)),
    computerId: fc.constantFrom(...w.computers.map((c) => c.id)),
    hostId: fc.constant(w.hostId),
    leaseToken: fc.constantFrom(...leases.map((l) => l.leaseToken)),
    reportId: fc.constant(o.report.id),
    startAfter: fc.constant(o.report.id),
    repoId: fc.constant(o.report.repoId),
    limit: fc.integer({ min: 1, max: 100 }),
    cursor: fc.constant(""),
    "GetUsersRequest.cursor": fc.constantFrom("", ...members.map((m) => m.userId)),

    // Analytics and its rollup.
    startDate: pastDay,
    endDate: yesterday,
    // Mostly the last days: a rollup of the whole history (every organization when orgId is
    // empty) is valid too, and slow enough that a few of them are plenty.
    fromDate: fc.oneof(
      { weight: 9, arbitrary: fc.integer({ min: 1, max: 5 }).map((d) => dayOf(Date.now() - d * DAY_MS)) },
      { weight: 1, arbitrary: date },
    ),
    toDate: yesterday,
    "GetTokensRequest.groupBy": fc.constantFrom("", "model"),
    "GetToolsRequest.groupBy": fc.constantFrom("", "tool_name"),
    "GetActivityRequest.groupBy": fc.constantFrom("", "client"),
    "GetCodeRequest.groupBy": fc.constantFrom("", "language", "user"),
    "GetCostsRequest.groupBy": fc.constantFrom("", "model", "user"),
    // The JSON answer or an export (README "Exports"); with limit or cursor, /users exports are a 400.
    ...Object.fromEntries(
      [
        "GetTokensRequest",
        "GetToolsRequest",
        "GetActivityRequest",
        "GetProductivityRequest",
        "GetCodeRequest",
        "GetCostsRequest",
        "GetUsersRequest",
      ].map((m) => [`${m}.format`, fc.constantFrom("", "json", "csv", "ndjson")]),
    ),

    // Telemetry events (docs/telemetry.md).
    "TelemetryEvent.type": fc.constantFrom(...EVENT_TYPES),
    "TelemetryEvent.time": recentTime,
    "TelemetryEvent.userEmail": fc.constantFrom(...members.map((m) => m.email)),
    "TelemetryEvent.client": fc.constantFrom(...CLIENTS),
    "TelemetryEvent.eventId": fc.uuid(),
    "TelemetryEvent.autonomyMode": fc.constantFrom(...AUTONOMY_MODES),
    "TelemetryEvent.role": fc.constantFrom("user", "assistant"),
    "TelemetryEvent.modelTier": fc.constantFrom(...MODEL_TIERS),
    "TelemetryEvent.autonomyLevel": fc.constantFrom(...AUTONOMY_LEVELS),
    "TelemetryEvent.op": fc.constantFrom(...FILE_OPS),
    "TelemetryEvent.path": fc.constantFrom("src/index.ts", "README.md", "a/b/c.py"),
    "TelemetryEvent.language": fc.constantFrom("typescript", "python", "markdown"),
    "TelemetryEvent.name": word,
    inputTokens: fc.integer({ min: 0, max: 1_000_000 }),
    outputTokens: fc.integer({ min: 0, max: 1_000_000 }),
    cacheReadTokens: fc.integer({ min: 0, max: 1_000_000 }),
    cacheWriteTokens: fc.integer({ min: 0, max: 1_000_000 }),
    costUsd: fc.double({ min: 0, max: 100, noNaN: true }),
    linesAdded: fc.integer({ min: 0, max: 5_000 }),
    linesRemoved: fc.integer({ min: 0, max: 5_000 }),
    "TelemetryEvent.decision": fc.constantFrom(...EDIT_DECISIONS),
    modelId: fc.constantFrom("claude-sonnet-4", "gpt-5", "gemini-2.5-pro"),
    modelTier: fc.constantFrom(...MODEL_TIERS),

    // Readiness reports.
    "ReadinessReport.reportId": fc.oneof(fc.constant(""), fc.uuid()),
    "ReadinessReport.createdAt": fc.oneof(
      fc.constant(0),
      fc.integer({ min: Date.now() - 30 * DAY_MS, max: Date.now() - 60_000 }),
    ),
    repoUrl: fc.constantFrom(
      "https://github.com/fuzz/repo",
      "git@github.com:fuzz/other.git",
      "ssh://git@gitlab.com/a/b",
    ),
    commitHash: fc.stringMatching(/^[0-9a-f]{40}$/),
    branch: fc.constantFrom("main", "feature/x"),
    droidVersion: fc.constantFrom("1.2.3", "0.9.0"),
    "ReadinessReport.apps#key": fc.constantFrom("apps/web", "apps/api", "."),
    "ReadinessReport.report#key": fc.constantFrom("readme", "lint", "tests", "ci"),
    numerator: fc.constantFrom(0, 1),
    denominator: fc.constantFrom(1, 2, 3),
    appPaths: fc.constant([]),
    reasoningEffort: fc.constantFrom("low", "medium", "high", "off"),
    "ModelUsed.id": word,

    // Sessions.
    "ListSessionsRequest.limit": fc.integer({ min: 1, max: 100 }).map(String),
    "ListMessagesRequest.limit": fc.integer({ min: 1, max: 100 }).map(String),
    // Each seeded session has at least two events (its message, and pending): "0" replays them.
    "WatchSessionEventsRequest.after": fc.constantFrom("0", "1", "2"),
    "ListMessagesRequest.role": fc.constantFrom("user", "assistant", "tool"),
    "NewMessage.role": fc.constantFrom("assistant", "tool", "system"),
    visibility: fc.constantFrom("both", "llm_only", "user_only"),
    openaiPhase: fc.constantFrom("commentary", "final_answer"),
    chatCompletionReasoningField: fc.constantFrom("reasoning", "reasoning_content"),
    model: fc.constantFrom("claude-sonnet-4", "gpt-5"),
    specModeModel: fc.constantFrom("claude-opus-4"),
    providerLockTimestamp: fc.constant(new Date().toISOString()),
    archivedAt: fc.constant(new Date().toISOString()),
    assistantActiveTimeMs: fc.integer({ min: 0, max: 10_000_000 }),
    tags: fc.array(fc.record({ name: word }), { maxLength: 3 }),
    enabledToolIds: fc.array(fc.constantFrom("Read", "Edit", "Execute"), { maxLength: 3 }),
    disabledToolIds: fc.array(fc.constantFrom("WebSearch"), { maxLength: 1 }),
    childInclusiveTokenUsageBySessionId: fc.constant({}),
    "SessionSettingsUpdate.childInclusiveTokenUsageBySessionId": fc.constant({}),
    "ImageAttachment.data": fc.constantFrom(PNG, `data:image/png;base64,${PNG}`),
    "FileAttachment.data": text,
    "FileAttachment.parsedData": text,
    "FileAttachment.name": fc.constantFrom("notes.txt", "spec.pdf"),
    "FileAttachment.path": fc.constantFrom("docs/notes.txt", ""),
    "PostMessageRequest.text": text,
    "ContentBlock.text": text,
    "ContentBlock.id": word,
    title: text,
    runnerId: word,
    leaseSeconds: fc.integer({ min: 5, max: 3600 }),
    // CreateSession (public) takes the caller's organization and user: only these are its own.
    "NewSessionRequest.text": text,
    // The methods that use up a session draw from pools no other method uses (rpc-setup.ts).
    "InterruptSessionRequest.sessionId": fc.constantFrom(...w.disposable.interrupt),
    "DeleteSessionRequest.sessionId": fc.constantFrom(...w.disposable.delete),
    "CreateSessionRequest.client": fc.constantFrom(...CLIENTS),
    "CreateSessionRequest.autonomyMode": fc.constantFrom(...AUTONOMY_MODES),

    // Computers and hosts.
    "CreateComputerRequest.name": freshName,
    "UpdateComputerRequest.name": freshName,
    "GetComputerByNameRequest.name": fc.constant(w.named),
    "CreateComputerRequest.hostId": fc.uuid(),
    "UpdateComputerRequest.hostId": fc.uuid(),
    remoteUser: fc.constantFrom("dev", "ubuntu"),
    provider: fc.constantFrom("byom", "e2b"),
    repos: fc.array(fc.constantFrom("https://github.com/fuzz/repo", "git@github.com:fuzz/other.git"), { maxLength: 2 }),
    hostname: fc.constantFrom("host-1.example.test", "runner-7"),
    relayClientUrl: fc.constantFrom("", "https://relay.example.test/client", "wss://relay.example.test/c"),
    relayAgentUrl: fc.constantFrom("", "https://relay.example.test/agent"),

    // Computers whole (issue 20): what removes or resets draws from its own pool (rpc-setup.ts).
    "DeleteComputerRequest.computerId": fc.constantFrom(...w.removable.computers),
    "RetryComputerProvisioningRequest.computerId": fc.constantFrom(...w.removable.failedComputers),

    // Organization.
    "ListUsersRequest.limit": fc.integer({ min: 1, max: 100 }).map(String),
    "DeleteUserCreditLimitRequest.email": fc.constantFrom(...w.removable.limitEmails),
    // Webhooks: an https URL with a public IP literal passes the target check without DNS.
    "CreateWebhookRequest.url": fc.constantFrom(WEBHOOK_URL, "https://93.184.216.34:8443/a/b?c=d"),
    "CreateWebhookRequest.events": fc.subarray(
      ["session.status_changed", "message.created", "computer.status_changed"],
      {
        minLength: 1,
      },
    ),
    "CreateWebhookRequest.description": fc.string({ maxLength: 100 }),
    webhookId: fc.constant(w.webhookId),
    "DeleteWebhookRequest.webhookId": fc.constantFrom(...w.removable.webhooks),
    email: fc.constantFrom(...members.map((m) => m.email)),
    "UserCreditLimit.limit": fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 1_000_000 })),

    // Health: the whole server, or one served service.
    "HealthCheckRequest.service": fc.constantFrom(
      "",
      "agentplane.sessions.v1alpha1.SessionService",
      "grpc.health.v1.Health",
    ),
  };
}

/** The pool for a field, if any: "Message.field", then "field". */
export function poolFor(
  pools: Record<string, fc.Arbitrary<unknown>>,
  message: DescMessage,
  field: DescField,
  suffix = "",
): fc.Arbitrary<unknown> | undefined {
  return pools[`${message.name}.${field.localName}${suffix}`] ?? (suffix ? undefined : pools[field.localName]);
}

const INT32 = [0, 1, -1, 2147483647, -2147483648, 100, 101, 3600, 3601, 4, 5];
const UINT32 = [0, 1, 4294967295, 2147483648];
const INT64 = ["0", "1", "-1", "9223372036854775807", "-9223372036854775808", "9007199254740993"];
const UINT64 = ["0", "18446744073709551615"];

/** Hostile values a field of this scalar type can still carry (so the binary form has them too). */
export function hostileScalar(t: ScalarType): fc.Arbitrary<unknown> {
  switch (t) {
    case ScalarType.STRING:
      return hostileString;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return fc.constantFrom<unknown>(...BOUNDARY_NUMBERS, "NaN", "Infinity", "-Infinity", 1e-7, 123456789.125, 3.4e38);
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return fc.constantFrom(...INT32);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return fc.constantFrom(...UINT32);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return fc.constantFrom(...INT64);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return fc.constantFrom(...UINT64);
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.BYTES:
      return fc.constantFrom("", "AAAA", "////", "A".repeat(40_000));
  }
}

/** A plain value of the type, for fields without a pool. */
export function plainScalar(t: ScalarType): fc.Arbitrary<unknown> {
  switch (t) {
    case ScalarType.STRING:
      return word;
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.BYTES:
      return fc.constant("AAAA");
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return fc.integer({ min: 0, max: 1000 });
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return fc.integer({ min: 0, max: 1000 }).map(String);
    default:
      return fc.integer({ min: 0, max: 100 });
  }
}

/** Converts a pool value to the JSON a field of this scalar type takes. */
export function coerce(t: ScalarType | undefined, v: unknown): unknown {
  if (t === ScalarType.STRING && typeof v === "number") return String(v);
  if (
    t !== undefined &&
    t !== ScalarType.STRING &&
    t !== ScalarType.BYTES &&
    t !== ScalarType.BOOL &&
    typeof v === "string" &&
    /^-?\d+$/.test(v)
  ) {
    return [ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64].includes(t)
      ? v
      : Number(v);
  }
  return v;
}

const LEASES_OF: Record<string, keyof RpcWorld["leases"]> = {
  RenewLeaseRequest: "renew",
  AppendMessagesRequest: "append",
  FinishRunRequest: "finish",
};

/**
 * Fields that only work together: a lease token proves the lease of one session, a message ID
 * names a message of one session. When the generator chose both valid, the case takes a real
 * pair, so such calls can succeed.
 */
export function coherentFor(w: RpcWorld, message: DescMessage): fc.Arbitrary<Record<string, unknown>> | undefined {
  const names = new Set(message.fields.map((f) => f.localName));
  const leases = LEASES_OF[message.name];
  if (leases)
    return fc.constantFrom(...w.leases[leases]).map((l) => ({ sessionId: l.sessionId, leaseToken: l.leaseToken }));
  // A report is valid only when all of its many fields are; now and then take a whole one.
  if (message.name === "SubmitReportRequest") {
    const report = fc.uuid().map((reportId) => ({
      report: {
        reportId,
        createdAt: 0,
        repoUrl: "https://github.com/fuzz/repo",
        report: { readme: { numerator: 1, denominator: 1, rationale: "present" } },
      },
    }));
    return fc.oneof({ weight: 3, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: report });
  }
  if (names.has("sessionId") && names.has("messageId")) {
    const roles = Object.keys(w.org.messages) as (keyof typeof w.org.messages)[];
    return fc.constantFrom(...roles).map((r) => ({ sessionId: w.org.sessions[r], messageId: w.org.messages[r] }));
  }
  return undefined;
}
