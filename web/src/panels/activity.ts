// Active users: daily, weekly (trailing 7 days) and monthly (trailing 30 days), and daily active
// users by client (terminal-ui, web, non-interactive-cli), from one /activity answer.
import type { ActivityRow, Envelope } from "../api-types.js";
import { drawChart } from "../chart.js";
import { ANALYTICS, type LoadContext, rangeQuery } from "../context.js";
import { Panel } from "../panel.js";
import { hasAnyValue, seriesOfFields } from "../series.js";

export async function loadActivity(ctx: LoadContext): Promise<void> {
  const users = new Panel("active-users");
  const clients = new Panel("active-by-client");
  const answer = ctx.api.get<Envelope<ActivityRow>>(`${ANALYTICS}/activity`, rangeQuery(ctx), ctx.signal);
  await Promise.all([
    users.load(
      () => answer,
      ({ data: rows }) => {
        const data = seriesOfFields(ctx.days, rows, [
          { label: "Daily", pick: (r) => r.daily_active_users },
          { label: "Weekly", pick: (r) => r.weekly_active_users },
          { label: "Monthly", pick: (r) => r.monthly_active_users },
        ]);
        if (!hasAnyValue(data)) return false;
        drawChart("active-users", users.body, data, {
          description: `Daily, weekly and monthly active users, ${ctx.range.start} to ${ctx.range.end}.`,
          provisionalFrom: ctx.provisionalFrom,
        });
        return true;
      },
      "No one was active in this range.",
    ),
    clients.load(
      () => answer,
      ({ data: rows }) => {
        const names = [...new Set(rows.flatMap((r) => Object.keys(r.daily_active_users_by_client ?? {})))].sort();
        const data = seriesOfFields(
          ctx.days,
          rows,
          names.map((name) => ({ label: name, pick: (r) => r.daily_active_users_by_client?.[name] ?? 0 })),
        );
        if (!hasAnyValue(data)) return false;
        drawChart("active-by-client", clients.body, data, {
          description: `Daily active users by client (${names.join(", ")}), ${ctx.range.start} to ${ctx.range.end}.`,
          provisionalFrom: ctx.provisionalFrom,
        });
        return true;
      },
      "No one was active in this range.",
    ),
  ]);
}
