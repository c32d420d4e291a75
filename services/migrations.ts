// Every migration, listed explicitly in the order it applies. Migrations are frozen once
// merged: a change to the schema is a new entry at the end.
import type { Migration } from "kysely";
import * as organization0001 from "./organization/migrations/0001_organization.js";
import * as sessions0002 from "./sessions/migrations/0002_sessions.js";
import * as computers0003 from "./computers/migrations/0003_computers.js";
import * as organization0004 from "./organization/migrations/0004_organization_credit_limits.js";
import * as readiness0005 from "./readiness/migrations/0005_readiness.js";
import * as analytics0006 from "./analytics/migrations/0006_analytics.js";
import * as analytics0007 from "./analytics/migrations/0007_analytics_rendered_rows.js";
import * as analytics0008 from "./analytics/migrations/0008_analytics_event_id_claims.js";
import * as sessions0009 from "./sessions/migrations/0009_sessions_request_path.js";
import * as analytics0010 from "./analytics/migrations/0010_analytics_tokens_deflated.js";
import * as analytics0011 from "./analytics/migrations/0011_analytics_users_digest.js";
import * as analytics0012 from "./analytics/migrations/0012_analytics_events_org_day.js";
import * as analytics0013 from "./analytics/migrations/0013_analytics_pending_marks.js";
import * as analytics0014 from "./analytics/migrations/0014_analytics_tokens_crc32.js";
import * as analytics0015 from "./analytics/migrations/0015_analytics_events_model_usage_by_user.js";
import * as organization0016 from "./organization/migrations/0016_organization_service_accounts.js";
import * as sessions0017 from "./sessions/migrations/0017_sessions_events.js";
import * as organization0018 from "./organization/migrations/0018_organization_webhooks.js";
import * as analytics0019 from "./analytics/migrations/0019_analytics_events_code_cost_source.js";
import * as analytics0020 from "./analytics/migrations/0020_analytics_code_costs.js";
import * as analytics0021 from "./analytics/migrations/0021_analytics_otlp_series.js";
import * as computers0022 from "./computers/migrations/0022_computers_list_order.js";
import * as computers0023 from "./computers/migrations/0023_computers_sandbox_reaps.js";

export const migrations: Record<string, Migration> = {
  "0001_organization": organization0001,
  "0002_sessions": sessions0002,
  "0003_computers": computers0003,
  "0004_organization_credit_limits": organization0004,
  "0005_readiness": readiness0005,
  "0006_analytics": analytics0006,
  "0007_analytics_rendered_rows": analytics0007,
  "0008_analytics_event_id_claims": analytics0008,
  "0009_sessions_request_path": sessions0009,
  "0010_analytics_tokens_deflated": analytics0010,
  "0011_analytics_users_digest": analytics0011,
  "0012_analytics_events_org_day": analytics0012,
  "0013_analytics_pending_marks": analytics0013,
  "0014_analytics_tokens_crc32": analytics0014,
  "0015_analytics_events_model_usage_by_user": analytics0015,
  "0016_organization_service_accounts": organization0016,
  "0017_sessions_events": sessions0017,
  "0018_organization_webhooks": organization0018,
  "0019_analytics_events_code_cost_source": analytics0019,
  "0020_analytics_code_costs": analytics0020,
  "0021_analytics_otlp_series": analytics0021,
  "0022_computers_list_order": computers0022,
  "0023_computers_sandbox_reaps": computers0023,
};
