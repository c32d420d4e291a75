// Credits by model over time: /tokens?group_by=model, one line per model.
import type { Envelope, GroupedRow } from "../api-types.js";
import { drawChart } from "../chart.js";
import { ANALYTICS, type LoadContext, rangeQuery } from "../context.js";
import { byId, replaceChildren } from "../dom.js";
import { formatCompact } from "../format.js";
import { Panel } from "../panel.js";
import { hasAnyValue, seriesByGroup, seriesTotal } from "../series.js";

export function loadCredits(ctx: LoadContext): Promise<void> {
  const panel = new Panel("credits");
  return panel.load(
    () =>
      ctx.api.get<Envelope<GroupedRow>>(`${ANALYTICS}/tokens`, { ...rangeQuery(ctx), group_by: "model" }, ctx.signal),
    (answer) => {
      const data = seriesByGroup(ctx.days, answer.data, (r) => r.billable_tokens ?? 0);
      if (!hasAnyValue(data)) return false;
      replaceChildren(byId("credits-total"), `${formatCompact(seriesTotal(data))} credits`);
      drawChart("credits", panel.body, data, {
        description: `Standard Credits per day by model, ${ctx.range.start} to ${ctx.range.end}: ${data.series.map((s) => s.label).join(", ")}.`,
        provisionalFrom: ctx.provisionalFrom,
      });
      return true;
    },
    "No credits were used in this range.",
  );
}
