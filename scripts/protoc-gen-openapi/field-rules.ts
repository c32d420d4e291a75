// What the protos cannot say about a field, written down once for the document: the enum values
// of string fields, bounds and formats, the fields the service requires in a request, and the
// message fields always printed in a response. Each rule restates a rule of the interface
// spec (its §2, §4 and §8) or of the service as the field's proto comment describes it; the
// contract test (test/openapi-contract.test.ts) checks real answers against the result.
// Keys are `<message full name>.<proto field name>`.
import type { JsonSchema } from "./json-schema.js";

export interface FieldRule {
  /** JSON Schema keywords added to the field's schema (`items` merges into the item schema). */
  readonly schema?: JsonSchema;
  /** The service refuses a request without it (a 400 naming the field). */
  readonly required?: true;
  /** Always printed in responses, although a message-typed field has presence and might not be. */
  readonly alwaysPrinted?: true;
  /** The query parameter's documented name where the spec spells it other than the JSON name. */
  readonly queryName?: string;
}

const ANALYTICS = "agentplane.analytics.v1";
const READINESS = "agentplane.readiness.v1";
const SESSIONS = "agentplane.sessions.v1alpha1";
const COMPUTERS = "agentplane.computers.v1alpha1";
const ORGANIZATION = "agentplane.organization.v1alpha1";

const DATE = { type: "string", format: "date", pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$" };
/** The v0 lists' page size: a string in the spec (§4.3, §4.5), 1 to 100, default 20. */
const V0_LIMIT = { pattern: "^(100|[1-9][0-9]?)$", default: "20" };
const NAME_63 = { minLength: 1, maxLength: 63 };
const SESSION_STATUS = { enum: ["idle", "pending", "running"] };
const WEBHOOK_EVENTS = { enum: ["session.status_changed", "message.created", "computer.status_changed"] };

/** The rules of the analytics requests (docs/interface.md §4.1): dates, group_by's values, the export format. */
function analyticsRequest(message: string, groupBy: readonly string[] | undefined): Record<string, FieldRule> {
  const rules: Record<string, FieldRule> = {
    [`${ANALYTICS}.${message}.start_date`]: { schema: DATE, required: true },
    [`${ANALYTICS}.${message}.end_date`]: { schema: DATE, required: true },
    [`${ANALYTICS}.${message}.format`]: { schema: { enum: ["json", "csv", "ndjson"], default: "json" } },
  };
  if (groupBy !== undefined) {
    rules[`${ANALYTICS}.${message}.group_by`] = { schema: { enum: groupBy }, queryName: "group_by" };
  }
  return rules;
}

export const FIELD_RULES: Readonly<Record<string, FieldRule>> = {
  // ---- analytics (docs/interface.md §2.1-2.6, §4.1) ----
  ...analyticsRequest("GetTokensRequest", ["model"]),
  ...analyticsRequest("GetToolsRequest", ["tool_name"]),
  ...analyticsRequest("GetActivityRequest", ["client"]),
  ...analyticsRequest("GetProductivityRequest", undefined),
  ...analyticsRequest("GetCodeRequest", ["language", "user"]),
  ...analyticsRequest("GetCostsRequest", ["model", "user"]),
  ...analyticsRequest("GetUsersRequest", undefined),
  [`${ANALYTICS}.GetUsersRequest.limit`]: { schema: { minimum: 1, maximum: 100, default: 20 } },
  [`${ANALYTICS}.AnalyticsResponse.meta`]: { alwaysPrinted: true },
  [`${ANALYTICS}.UsersResponse.meta`]: { alwaysPrinted: true },
  [`${ANALYTICS}.Meta.start_date`]: { schema: DATE },
  [`${ANALYTICS}.Meta.end_date`]: { schema: DATE },
  [`${ANALYTICS}.UsersMeta.start_date`]: { schema: DATE },
  [`${ANALYTICS}.UsersMeta.end_date`]: { schema: DATE },
  [`${ANALYTICS}.ToolsRow.tool_autonomy_level_ratio`]: { alwaysPrinted: true },
  [`${ANALYTICS}.UserDayRow.user_email`]: { schema: { type: ["string", "null"] }, alwaysPrinted: true },
  [`${ANALYTICS}.UserDayRow.delegation_level`]: {
    schema: { enum: ["auto-high", "auto-medium", "auto-low", "spec", "manual"] },
  },

  // ---- readiness (docs/interface.md §2.7, §4.2) ----
  [`${READINESS}.ListReportsRequest.limit`]: { schema: { minimum: 1, maximum: 100, default: 20 } },
  [`${READINESS}.ReadinessReport.report_id`]: { schema: { format: "uuid" } },
  [`${READINESS}.CriterionEvaluation.numerator`]: { schema: { minimum: 0 } },
  [`${READINESS}.CriterionEvaluation.denominator`]: { schema: { minimum: 1 } },
  [`${READINESS}.ModelUsed.reasoning_effort`]: { schema: { enum: ["low", "medium", "high", "off"] } },
  [`${READINESS}.ReadinessReport.score`]: { schema: { minimum: 0, maximum: 1 } },

  // ---- sessions (docs/interface.md §2.8, §2.9, §4.3) ----
  [`${SESSIONS}.ListSessionsRequest.limit`]: { schema: V0_LIMIT },
  [`${SESSIONS}.ListMessagesRequest.limit`]: { schema: V0_LIMIT },
  [`${SESSIONS}.ListMessagesRequest.role`]: { schema: { enum: ["user", "assistant", "tool"] } },
  [`${SESSIONS}.ListSessionsResponse.pagination`]: { alwaysPrinted: true },
  [`${SESSIONS}.ListMessagesResponse.pagination`]: { alwaysPrinted: true },
  [`${SESSIONS}.Session.status`]: { schema: SESSION_STATUS },
  [`${SESSIONS}.Session.session_settings`]: { alwaysPrinted: true },
  [`${SESSIONS}.SessionListItem.session_settings`]: { alwaysPrinted: true },
  [`${SESSIONS}.SessionSettings.token_usage`]: { alwaysPrinted: true },
  [`${SESSIONS}.SessionSettings.inclusive_token_usage`]: { alwaysPrinted: true },
  [`${SESSIONS}.Message.role`]: { schema: { enum: ["user", "assistant", "tool", "system"] } },
  [`${SESSIONS}.Message.user_message_source`]: {
    schema: {
      enum: [
        "web",
        "desktop",
        "cli_tui",
        "cli_exec",
        "cli_acp",
        "slack",
        "linear",
        "sessions_api",
        "api",
        "automation",
        "readiness-remediation",
        "readiness-evaluation",
        "wiki-generation",
        "wiki-ci-setup",
      ],
    },
  },
  [`${SESSIONS}.Message.visibility`]: { schema: { enum: ["both", "llm_only", "user_only"] } },
  // "enum or null" in the spec.
  [`${SESSIONS}.Message.openai_phase`]: {
    schema: { type: ["string", "null"], enum: ["commentary", "final_answer", null] },
  },
  [`${SESSIONS}.Message.chat_completion_reasoning_field`]: {
    schema: { enum: ["reasoning", "reasoning_content"] },
  },
  [`${SESSIONS}.PostMessageRequest.text`]: { schema: { minLength: 1, maxLength: 500_000 }, required: true },
  [`${SESSIONS}.PostMessageRequest.images`]: { schema: { maxItems: 20 } },
  [`${SESSIONS}.PostMessageRequest.files`]: { schema: { maxItems: 20 } },
  [`${SESSIONS}.PostMessageResponse.status`]: { schema: SESSION_STATUS },
  [`${SESSIONS}.NewSessionRequest.title`]: { schema: { maxLength: 500 } },
  [`${SESSIONS}.NewSessionRequest.text`]: { schema: { minLength: 1, maxLength: 500_000 } },
  [`${SESSIONS}.InterruptSessionResponse.status`]: { schema: SESSION_STATUS },
  [`${SESSIONS}.SessionEvent.type`]: { schema: { enum: ["session.status_changed", "message.created"] } },
  [`${SESSIONS}.SessionEvent.status`]: { schema: SESSION_STATUS },
  [`${SESSIONS}.SessionEvent.previous_status`]: { schema: SESSION_STATUS },
  [`${SESSIONS}.SessionEvent.role`]: { schema: { enum: ["user", "assistant", "tool", "system"] } },

  // ---- computers (docs/interface.md §2.10, §4.4) ----
  [`${COMPUTERS}.CreateComputerRequest.name`]: { schema: NAME_63, required: true },
  [`${COMPUTERS}.CreateComputerRequest.remote_user`]: { schema: NAME_63, required: true },
  [`${COMPUTERS}.CreateComputerRequest.provider`]: { schema: { enum: ["byom", "e2b"], default: "byom" } },
  [`${COMPUTERS}.CreateComputerRequest.host_id`]: { schema: { format: "uuid" } },
  [`${COMPUTERS}.CreateComputerRequest.repos`]: { schema: { maxItems: 20, items: { format: "uri", maxLength: 2048 } } },
  [`${COMPUTERS}.UpdateComputerRequest.name`]: { schema: NAME_63 },
  [`${COMPUTERS}.UpdateComputerRequest.host_id`]: { schema: { format: "uuid" } },
  [`${COMPUTERS}.UpdateComputerRequest.remote_user`]: { schema: NAME_63 },
  [`${COMPUTERS}.GetComputerByNameRequest.name`]: { schema: NAME_63 },
  [`${COMPUTERS}.ListComputersRequest.limit`]: { schema: V0_LIMIT },
  [`${COMPUTERS}.ListComputersResponse.pagination`]: { alwaysPrinted: true },
  [`${COMPUTERS}.Computer.name`]: { schema: NAME_63 },
  [`${COMPUTERS}.Computer.provider_type`]: { schema: { enum: ["byom", "e2b"] } },
  [`${COMPUTERS}.Computer.host_id`]: { schema: { format: "uuid" } },
  [`${COMPUTERS}.Computer.status`]: { schema: { enum: ["provisioning", "active", "error"] } },
  [`${COMPUTERS}.Computer.relay_client_url`]: { schema: { format: "uri" } },
  [`${COMPUTERS}.Computer.relay_agent_url`]: { schema: { format: "uri" } },
  [`${COMPUTERS}.ProvisioningStep.status`]: {
    schema: { enum: ["pending", "running", "succeeded", "failed", "skipped"] },
  },

  // ---- organization (docs/interface.md §2.11, §2.12, §4.5) ----
  [`${ORGANIZATION}.ListUsersRequest.limit`]: { schema: V0_LIMIT },
  [`${ORGANIZATION}.ListUsersResponse.pagination`]: { alwaysPrinted: true },
  [`${ORGANIZATION}.OrganizationUser.email`]: { schema: { format: "email" } },
  [`${ORGANIZATION}.OrganizationUser.created_at`]: { schema: { format: "date-time" } },
  [`${ORGANIZATION}.OrganizationUser.last_sign_in_at`]: { schema: { format: "date-time" } },
  [`${ORGANIZATION}.SetUserCreditLimitsRequest.users`]: { schema: { minItems: 1, maxItems: 100 }, required: true },
  [`${ORGANIZATION}.UserCreditLimit.limit`]: { schema: { minimum: 0 } },
  [`${ORGANIZATION}.ListUserCreditLimitsRequest.limit`]: { schema: V0_LIMIT },
  [`${ORGANIZATION}.ListUserCreditLimitsResponse.pagination`]: { alwaysPrinted: true },
  [`${ORGANIZATION}.CreditLimitUsage.limit`]: { schema: { minimum: 0 } },
  [`${ORGANIZATION}.CreditLimitUsage.remaining`]: { schema: { minimum: 0 } },
  [`${ORGANIZATION}.CreateWebhookRequest.url`]: { schema: { format: "uri", maxLength: 2048 }, required: true },
  [`${ORGANIZATION}.CreateWebhookRequest.events`]: {
    schema: { minItems: 1, uniqueItems: true, items: WEBHOOK_EVENTS },
    required: true,
  },
  [`${ORGANIZATION}.CreateWebhookRequest.description`]: { schema: { maxLength: 500 } },
  [`${ORGANIZATION}.Webhook.events`]: { schema: { items: WEBHOOK_EVENTS } },
  [`${ORGANIZATION}.ListWebhooksRequest.limit`]: { schema: V0_LIMIT },
  [`${ORGANIZATION}.ListWebhooksResponse.pagination`]: { alwaysPrinted: true },
  [`${ORGANIZATION}.ListWebhookDeliveriesRequest.limit`]: { schema: V0_LIMIT },
  [`${ORGANIZATION}.ListWebhookDeliveriesResponse.pagination`]: { alwaysPrinted: true },
  [`${ORGANIZATION}.WebhookDelivery.status`]: { schema: { enum: ["pending", "succeeded", "failed"] } },
};
