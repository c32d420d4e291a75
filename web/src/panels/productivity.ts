// Productivity: files created and edited, commits and pull requests per day (/productivity).
import type { Envelope, ProductivityRow } from "../api-types.js";
import { drawChart } from "../chart.js";
import { ANALYTICS, type LoadContext, rangeQuery } from "../context.js";
import { Panel } from "../panel.js";
import { hasAnyValue, seriesOfFields } from "../series.js";

export function loadProductivity(ctx: LoadContext): Promise<void> {
  const panel = new Panel("productivity");
  return panel.load(
    () => ctx.api.get<Envelope<ProductivityRow>>(`${ANALYTICS}/productivity`, rangeQuery(ctx), ctx.signal),
    ({ data: rows }) => {
      const data = seriesOfFields(ctx.days, rows, [
        { label: "Files edited", pick: (r) => r.files_edited },
        { label: "Files created", pick: (r) => r.files_created },
        { label: "Commits", pick: (r) => r.git_commits },
        { label: "Pull requests", pick: (r) => r.git_prs_created },
      ]);
      if (!hasAnyValue(data)) return false;
      drawChart("productivity", panel.body, data, {
        description: `Files edited and created, commits and pull requests per day, ${ctx.range.start} to ${ctx.range.end}.`,
        provisionalFrom: ctx.provisionalFrom,
      });
      return true;
    },
    "No files, commits or pull requests in this range.",
  );
}
