// The shapes of the API answers the dashboard reads (interface docs/interface.md §2 and the README's
// additive fields), as far as it reads them.
export interface Envelope<Row> {
  data: Row[];
  meta: { org_id: string; start_date: string; end_date: string; has_more?: boolean; next_cursor?: string };
}

/** A flattened row of a grouped answer (group_by=…). */
export interface GroupedRow {
  date: string;
  group_key: string;
  billable_tokens?: number;
  daily_active_users?: number;
  tool_calls?: number;
}

export interface ActivityRow {
  date: string;
  daily_active_users: number;
  weekly_active_users: number;
  monthly_active_users: number;
  daily_active_users_by_client: Record<string, number>;
  sessions: number;
  messages: number;
}

export interface ToolsRow {
  date: string;
  tool_calls: number;
  by_tool: { tool: string; invocations: number }[];
  mcp_by_server: { server: string; invocations: number }[];
  autonomy_ratio_avg: number;
}

export interface ProductivityRow {
  date: string;
  files_created: number;
  files_edited: number;
  git_commits: number;
  git_prs_created: number;
}

export interface UserDayRow {
  user_id: string;
  user_email: string | null;
  date: string;
  tool_calls: number;
  billable_tokens: number;
  primary_model: string;
  sessions: number;
  messages: number;
  files_created: number;
  files_edited: number;
  git_commits: number;
  git_prs_created: number;
}

export interface ReadinessReport {
  reportId: string;
  createdAt: number;
  repoUrl: string;
  branch?: string;
  commitHash?: string;
  score?: number;
  report: Record<string, { numerator: number; denominator: number; rationale: string }>;
}

export interface SessionListItem {
  sessionId: string;
  title?: string;
  messageCount: number;
  createdAt: number;
  updatedAt: number;
}

export interface Session extends SessionListItem {
  status: "idle" | "pending" | "running";
}

export interface SessionEvent {
  eventId: string;
  type: string;
  sessionId: string;
  status?: string;
  createdAt: number;
}
