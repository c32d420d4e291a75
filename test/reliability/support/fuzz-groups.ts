// Which fuzz file covers which endpoint of spec §4 (three files, so they run side by side).
export const FUZZ_GROUPS = {
  analytics: [
    "GET /api/v1/analytics/tokens",
    "GET /api/v1/analytics/tools",
    "GET /api/v1/analytics/activity",
    "GET /api/v1/analytics/productivity",
    "GET /api/v1/analytics/users",
  ],
  sessions: [
    "GET /api/v0/sessions",
    "GET /api/v0/sessions/{sessionId}",
    "PATCH /api/v0/sessions/{sessionId}",
    "GET /api/v0/sessions/{sessionId}/messages",
    "GET /api/v0/sessions/{sessionId}/messages/{messageId}",
    "GET /api/v0/sessions/{sessionId}/events",
    "POST /api/v0/sessions/{sessionId}/messages",
    "POST /api/v0/sessions",
    "POST /api/v0/sessions/{sessionId}/interrupt",
    "DELETE /api/v0/sessions/{sessionId}",
  ],
  v0: [
    "GET /api/organization/maturity-level-reports",
    "POST /api/v0/computers",
    "PATCH /api/v0/computers/{computerId}",
    "GET /api/v0/computers/name/{name}",
    "GET /api/v0/organization/users",
    "PUT /api/v0/organization/usage/limits/users",
  ],
} as const;
