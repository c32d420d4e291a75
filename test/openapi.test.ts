// The generated OpenAPI document (gen/openapi/openapi.json): a valid OpenAPI 3.1 document, with
// exactly the REST routes the TypeScript edge serves, and every route, parameter, field and
// limit of the interface spec (§2, §4, §7, §8) written out here by hand, not derived from the
// protos the document is generated from. test/openapi-contract.test.ts checks real answers
// against it.
import SwaggerParser from "@apidevtools/swagger-parser";
import { describe, expect, it } from "vitest";
import { buildRouteTable } from "../services/edge/routes.js";
import { ALL_MODULES } from "../services/modules.js";
import { isPublic } from "../services/platform/module.js";
import { deref, loadOpenApi, operationOf, responseOf, type Schema } from "./support/openapi.js";

const doc = loadOpenApi();

/** The object schema of `schema` (references followed): its property names and required ones. */
function shape(schema: Schema): { properties: Record<string, Schema>; required: string[] } {
  const s = deref(doc, schema);
  return { properties: s.properties ?? {}, required: s.required ?? [] };
}

/** The JSON schema of an operation's success answer. */
function answer(method: string, path: string, status = 200): Schema {
  const op = operationOf(doc, method, path);
  expect(op, `${method} ${path}`).toBeDefined();
  return responseOf(doc, op!, status)!.content["application/json"].schema;
}

function requestBody(method: string, path: string): Schema {
  return operationOf(doc, method, path)!.requestBody.content["application/json"].schema;
}

/** `fields` are properties of `schema`; those ending in `*` are required. */
function expectFields(schema: Schema, fields: string, where: string) {
  const { properties, required } = shape(schema);
  for (const f of fields.split(/\s+/).filter(Boolean)) {
    const name = f.replace(/\*$/, "");
    expect(Object.keys(properties), `${where}: ${name}`).toContain(name);
    if (f.endsWith("*")) expect(required, `${where}: ${name} required`).toContain(name);
  }
}

const prop = (schema: Schema, name: string): Schema => deref(doc, shape(schema).properties[name]!);
const items = (schema: Schema, name: string): Schema => deref(doc, prop(schema, name).items);

function params(method: string, path: string): Record<string, Schema> {
  const op = operationOf(doc, method, path)!;
  return Object.fromEntries((op.parameters ?? []).map((p: Schema) => [`${p.in}:${p.name}`, p]));
}

describe("gen/openapi/openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    expect(doc.openapi).toBe("3.1.0");
    const api = await SwaggerParser.validate(structuredClone(doc) as never);
    expect(Object.keys(api.paths ?? {}).length).toBeGreaterThan(20);
  });

  it("has exactly the REST routes of the TypeScript edge's public services that take credentials", () => {
    // The open web pages (the dashboard, /openapi.json, /docs) are routed too, but are no API.
    const services = ALL_MODULES.flatMap((m) =>
      m.services.filter((s) => isPublic(s) && s.policy.kind === "public").map((s) => s.service),
    );
    const edge = buildRouteTable(services).routes.map(
      (r) => `${r.httpMethod.toLowerCase()} ${r.template.source.replace(/\{([a-z_]+)\}/g, (_, f) => `{${camel(f)}}`)}`,
    );
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item as object).map((method) => `${method} ${path}`),
    );
    expect(documented.sort()).toEqual(edge.sort());
  });

  it("answers errors with the error body {title, detail, status, requestId}", () => {
    const error = doc.components.schemas.Error;
    expect(error.required.sort()).toEqual(["detail", "requestId", "status", "title"]);
    expect(error.additionalProperties).toBe(false);
    // docs/interface.md §7: the analytics statuses and the readiness statuses.
    for (const path of ["/api/v1/analytics/tokens", "/api/v1/analytics/users"]) {
      for (const status of [400, 401, 403, 500]) {
        const res = responseOf(doc, operationOf(doc, "get", path)!, status);
        expect(res?.content["application/json"].schema.$ref, `${path} ${status}`).toBe("#/components/schemas/Error");
      }
    }
    for (const status of [400, 401, 500]) {
      expect(
        responseOf(doc, operationOf(doc, "get", "/api/organization/maturity-level-reports")!, status),
      ).toBeDefined();
    }
  });

  it("documents every route with the authentication every call needs (docs/interface.md §5)", () => {
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
  });

  describe("analytics (docs/interface.md §2.1-2.6, §4.1)", () => {
    const ROWS: Array<[string, string, string | undefined, string, string | undefined]> = [
      [
        "tokens",
        "date billable_tokens input_tokens output_tokens cache_read_tokens cache_write_tokens by_model by_user",
        "model",
        "TokensRow",
        "date group_key billable_tokens input_tokens output_tokens",
      ],
      [
        "tools",
        "date tool_calls by_tool mcp_users_with_mcp mcp_by_server skills_invocations skills_by_name slash_commands_invocations slash_commands_by_name hooks_invocations hooks_by_event web_users autonomy_ratio_avg autonomy_ratio_p50 autonomy_ratio_p90 tool_calls_per_session_avg user_turns_per_session_avg tool_autonomy_level_ratio",
        "tool_name",
        "ToolsRow",
        "date group_key tool_calls",
      ],
      [
        "activity",
        "date daily_active_users weekly_active_users monthly_active_users daily_active_users_by_client sessions messages user_messages",
        "client",
        "ActivityRow",
        "date group_key daily_active_users",
      ],
      [
        "productivity",
        "date files_created files_edited by_extension by_language git_commits git_prs_created",
        undefined,
        "ProductivityRow",
        undefined,
      ],
    ];
    for (const [endpoint, fields, groupBy, , groupFields] of ROWS) {
      it(`/${endpoint}: query, envelope and rows`, () => {
        const path = `/api/v1/analytics/${endpoint}`;
        const p = params("get", path);
        expect(p["query:startDate"]).toMatchObject({ required: true, schema: { format: "date" } });
        expect(p["query:endDate"]).toMatchObject({ required: true, schema: { format: "date" } });
        if (groupBy === undefined) expect(p["query:group_by"]).toBeUndefined();
        else expect(p["query:group_by"]).toMatchObject({ required: false, schema: { enum: [groupBy] } });
        const envelope = answer("get", path);
        expectFields(envelope, "data* meta*", path);
        expectFields(prop(envelope, "meta"), "org_id* start_date* end_date*", `${path} meta`);
        const rows: Schema[] = (prop(envelope, "data").items.oneOf ?? [prop(envelope, "data").items]).map((r: Schema) =>
          deref(doc, r),
        );
        expectFields(rows[0]!, fields.replace(/(\S+)/g, "$1*"), `${path} row`);
        if (groupFields !== undefined)
          expectFields(rows[1]!, groupFields.replace(/(\S+)/g, "$1*"), `${path} group row`);
      });
    }

    it("/tokens nested breakdowns", () => {
      const row = deref(doc, prop(answer("get", "/api/v1/analytics/tokens"), "data").items.oneOf[0]);
      expectFields(
        items(row, "by_model"),
        "model_id model_tier billable_tokens input_tokens output_tokens",
        "by_model",
      );
      expectFields(items(row, "by_user"), "user_id user_email billable_tokens by_model", "by_user");
    });

    it("/tools nested breakdowns", () => {
      const row = deref(doc, prop(answer("get", "/api/v1/analytics/tools"), "data").items.oneOf[0]);
      expectFields(items(row, "by_tool"), "tool invocations", "by_tool");
      expectFields(items(row, "mcp_by_server"), "server invocations", "mcp_by_server");
      expectFields(items(row, "skills_by_name"), "name count", "skills_by_name");
      expectFields(items(row, "hooks_by_event"), "event matcher command count", "hooks_by_event");
      expectFields(prop(row, "tool_autonomy_level_ratio"), "auto_high auto_medium auto_low manual", "ratio");
    });

    it("/users: paging parameters, meta and per-user rows", () => {
      const path = "/api/v1/analytics/users";
      expect(params("get", path)["query:limit"]).toMatchObject({
        schema: { type: "integer", minimum: 1, maximum: 100, default: 20 },
      });
      expect(params("get", path)["query:cursor"]).toBeDefined();
      const envelope = answer("get", path);
      expectFields(prop(envelope, "meta"), "org_id start_date end_date has_more* next_cursor*", "users meta");
      const row = items(envelope, "data");
      expectFields(
        row,
        "user_id user_email date tool_calls billable_tokens primary_model primary_model_tier files_created files_edited git_commits git_prs_created mcp_calls skill_calls slash_commands hooks sessions messages user_messages assistant_messages autonomy_ratio delegation_level languages",
        "users row",
      );
      expect(prop(row, "user_email").type).toEqual(["string", "null"]);
      expect(prop(row, "delegation_level").enum).toEqual(["auto-high", "auto-medium", "auto-low", "spec", "manual"]);
      expect(prop(row, "languages")).toMatchObject({ type: "array", items: { type: "string" } });
    });
  });

  it("readiness reports (docs/interface.md §2.7, §4.2)", () => {
    const path = "/api/organization/maturity-level-reports";
    const p = params("get", path);
    expect(Object.keys(p).sort()).toEqual(["query:limit", "query:repoId", "query:startAfter"]);
    expect(p["query:limit"]!.schema).toMatchObject({ type: "integer", minimum: 1 });
    const report = items(answer("get", path), "reports");
    expectFields(
      report,
      "reportId createdAt repoUrl apps report commitHash branch hasLocalChanges hasNonRemoteCommits modelUsed droidVersion",
      "report",
    );
    expect(prop(report, "reportId").format).toBe("uuid");
    expectFields(deref(doc, prop(report, "apps").additionalProperties), "description", "apps");
    const criterion = deref(doc, prop(report, "report").additionalProperties);
    expectFields(criterion, "numerator denominator rationale", "criterion");
    expect(prop(criterion, "denominator").minimum).toBe(1);
    expect(prop(prop(report, "modelUsed"), "reasoningEffort").enum).toEqual(["low", "medium", "high", "off"]);
  });

  describe("sessions (docs/interface.md §2.8, §2.9, §4.3)", () => {
    const SESSION = "sessionId* messageCount* createdAt* updatedAt* title completedAt computerId sessionSettings";
    const SETTINGS_IN =
      "model specModeModel providerLockTimestamp assistantActiveTimeMs childInclusiveTokenUsageBySessionId archivedAt tags enabledToolIds disabledToolIds";

    it("GET /sessions", () => {
      const path = "/api/v0/sessions";
      const p = params("get", path);
      expect(Object.keys(p).sort()).toEqual(["query:computerId", "query:cursor", "query:limit"]);
      expect(p["query:limit"]!.schema).toMatchObject({ type: "string", default: "20" });
      const body = answer("get", path);
      expectFields(body, "sessions* pagination*", path);
      expectFields(prop(body, "pagination"), "hasMore nextCursor", "pagination");
      const item = items(body, "sessions");
      expectFields(item, SESSION, "list item");
      expect(shape(item).properties.status).toBeUndefined();
    });

    it("GET and PATCH /sessions/{sessionId}", () => {
      const path = "/api/v0/sessions/{sessionId}";
      expect(Object.keys(params("get", path)).sort()).toEqual(["path:sessionId", "query:computerId"]);
      const session = answer("get", path);
      expectFields(session, `${SESSION} status*`, "session");
      expect(prop(session, "status").enum).toEqual(["idle", "pending", "running"]);
      const settings = prop(session, "sessionSettings");
      expectFields(settings, `${SETTINGS_IN} tokenUsage inclusiveTokenUsage`, "sessionSettings");
      expectFields(
        prop(settings, "tokenUsage"),
        "inputTokens outputTokens cacheCreationTokens cacheReadTokens thinkingTokens factoryCredits",
        "tokenUsage",
      );
      expectFields(items(settings, "tags"), "name metadata", "tags");
      expect(answer("patch", path)).toEqual(answer("get", path));
      const update = prop(requestBody("patch", path), "sessionSettings");
      expectFields(update, SETTINGS_IN, "PATCH sessionSettings");
      expect(shape(update).properties.tokenUsage).toBeUndefined();
      expect(shape(update).properties.inclusiveTokenUsage).toBeUndefined();
    });

    it("messages: list, get one, post", () => {
      const list = "/api/v0/sessions/{sessionId}/messages";
      expect(Object.keys(params("get", list)).sort()).toEqual([
        "path:sessionId",
        "query:computerId",
        "query:cursor",
        "query:limit",
        "query:role",
      ]);
      expect(params("get", list)["query:role"]!.schema.enum).toEqual(["user", "assistant", "tool"]);
      const body = answer("get", list);
      expectFields(body, "messages* pagination*", list);
      const listed = items(body, "messages");
      const LISTED =
        "id content createdAt updatedAt parentId openaiMessageId openaiEncryptedContent openaiReasoningId openaiReasoningSummary geminiThoughtSignature chatCompletionReasoningContent isUserVisible isError";
      expectFields(listed, LISTED, "listed message");
      for (const absent of ["role", "userMessageSource", "visibility", "openaiPhase", "chatCompletionReasoningField"]) {
        expect(shape(listed).properties[absent], absent).toBeUndefined();
      }
      const message = answer("get", "/api/v0/sessions/{sessionId}/messages/{messageId}");
      expectFields(
        message,
        `${LISTED} id* role* content* createdAt* updatedAt* userMessageSource visibility openaiPhase chatCompletionReasoningField`,
        "message",
      );
      expect(prop(message, "role").enum).toEqual(["user", "assistant", "tool", "system"]);
      expect(prop(message, "visibility").enum).toEqual(["both", "llm_only", "user_only"]);
      expect(prop(message, "openaiPhase")).toMatchObject({
        type: ["string", "null"],
        enum: ["commentary", "final_answer", null],
      });
      expect(prop(message, "chatCompletionReasoningField").enum).toEqual(["reasoning", "reasoning_content"]);
      expect(prop(message, "userMessageSource").enum).toHaveLength(14);
      expect(prop(message, "geminiThoughtSignature").deprecated).toBe(true);
      expectFields(items(message, "content"), "text id", "content block");

      const post = requestBody("post", list);
      expectFields(post, "text* images files computerId", "post body");
      expectFields(items(post, "images"), "data", "image");
      expectFields(items(post, "files"), "data parsedData name path", "file");
      const posted = answer("post", list);
      expectFields(posted, "messageId status*", "post answer");
      expect(prop(posted, "status").enum).toEqual(["idle", "pending", "running"]);
    });
  });

  describe("computers (docs/interface.md §2.10, §4.4)", () => {
    const COMPUTER =
      "id* name* providerType* createdAt* hostId hostname status provisioningSteps relayClientUrl relayAgentUrl remoteUser";

    it("POST /computers: 201 with the computer", () => {
      const body = requestBody("post", "/api/v0/computers");
      expectFields(body, "name* remoteUser* provider hostId repos autoInstallDeps", "create body");
      expect(prop(body, "name")).toMatchObject({ minLength: 1, maxLength: 63 });
      expect(prop(body, "remoteUser")).toMatchObject({ minLength: 1, maxLength: 63 });
      expect(prop(body, "provider").enum).toEqual(["byom", "e2b"]);
      expect(prop(body, "hostId").format).toBe("uuid");
      expect(prop(body, "repos")).toMatchObject({ maxItems: 20, items: { maxLength: 2048, format: "uri" } });
      const computer = answer("post", "/api/v0/computers", 201);
      expectFields(computer, COMPUTER, "computer");
      expect(prop(computer, "providerType").enum).toEqual(["byom", "e2b"]);
      expect(prop(computer, "status").enum).toEqual(["provisioning", "active", "error"]);
      expectFields(
        items(computer, "provisioningSteps"),
        "id name status error startedAt completedAt installSessionId",
        "step",
      );
    });

    it("PATCH /computers/{computerId} and GET /computers/name/{name}", () => {
      const patch = requestBody("patch", "/api/v0/computers/{computerId}");
      expectFields(patch, "name hostId remoteUser", "patch body");
      expect(shape(patch).required).toEqual([]);
      expect(prop(patch, "name")).toMatchObject({ minLength: 1, maxLength: 63 });
      expectFields(answer("patch", "/api/v0/computers/{computerId}"), COMPUTER, "patched");
      const byName = params("get", "/api/v0/computers/name/{name}");
      expect(byName["path:name"]).toMatchObject({ required: true, schema: { minLength: 1, maxLength: 63 } });
      expectFields(answer("get", "/api/v0/computers/name/{name}"), COMPUTER, "by name");
    });
  });

  describe("organization (docs/interface.md §2.11, §2.12, §4.5)", () => {
    it("GET /organization/users", () => {
      const path = "/api/v0/organization/users";
      expect(Object.keys(params("get", path)).sort()).toEqual(["query:cursor", "query:limit"]);
      const body = answer("get", path);
      expectFields(body, "users* pagination*", path);
      const user = items(body, "users");
      expectFields(user, "id email createdAt metadata firstName lastName lastSignInAt", "user");
      expect(prop(user, "email").format).toBe("email");
    });

    it("PUT /organization/usage/limits/users", () => {
      const path = "/api/v0/organization/usage/limits/users";
      const body = requestBody("put", path);
      expectFields(body, "users*", "limits body");
      expect(prop(body, "users")).toMatchObject({ minItems: 1, maxItems: 100 });
      expectFields(items(body, "users"), "email limit", "limit entry");
      const res = answer("put", path);
      expectFields(res, "updated* errors*", "limits answer");
      expectFields(items(res, "updated"), "email limit", "updated entry");
      expectFields(items(res, "errors"), "email error", "error entry");
    });
  });

  it("v0 list limits: 1 to 100, default 20 (docs/interface.md §8)", () => {
    for (const path of ["/api/v0/sessions", "/api/v0/sessions/{sessionId}/messages", "/api/v0/organization/users"]) {
      const limit = params("get", path)["query:limit"]!.schema;
      const re = new RegExp(limit.pattern);
      expect(
        ["1", "20", "100"].every((v) => re.test(v)),
        path,
      ).toBe(true);
      expect(
        ["0", "101", "-1", "x", ""].some((v) => re.test(v)),
        path,
      ).toBe(false);
      expect(limit.default).toBe("20");
    }
  });
});

const camel = (s: string) => s.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
