// Time series as uPlot line charts, one point per UTC day. Each draw replaces the chart in its
// container, records what it drew in the debug mirror (debug.ts), and shades the days whose
// figures are provisional (the 24-hour lag: yesterday may still change).
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { daySeconds } from "./dates.js";
import { type ChartData, recordChart } from "./debug.js";
import { formatCompact } from "./format.js";

export const PALETTE = ["#4f6bed", "#e0729b", "#2aa876", "#f2a33a", "#8b5cf6", "#14a3b8", "#d9534f", "#6b7280"];

const charts = new Map<string, { plot: uPlot; observer: ResizeObserver }>();

export interface ChartOptions {
  /** The first provisional day: it and the days after it are shaded. */
  provisionalFrom?: string;
  /** A sentence describing the chart for screen readers. */
  description: string;
}

function shadeProvisional(from: string | undefined): uPlot.Plugin {
  return {
    hooks: {
      drawClear: (u: uPlot) => {
        if (from === undefined) return;
        const left = u.valToPos(daySeconds(from) - 43_200, "x", true);
        const right = u.bbox.left + u.bbox.width;
        if (left >= right) return;
        const x = Math.max(left, u.bbox.left);
        u.ctx.save();
        u.ctx.fillStyle = "rgba(242, 163, 58, 0.12)";
        u.ctx.fillRect(x, u.bbox.top, right - x, u.bbox.height);
        u.ctx.restore();
      },
    },
  };
}

function widthOf(container: HTMLElement): number {
  return Math.max(280, Math.floor(container.clientWidth));
}

const HEIGHT = 240;

export function drawChart(id: string, container: HTMLElement, data: ChartData, options: ChartOptions): void {
  destroyChart(id);
  recordChart(id, data);
  container.setAttribute("role", "img");
  container.setAttribute("aria-label", options.description);
  const series: uPlot.Series[] = [
    // The legend names the series; the values of the day under the cursor appear beside them.
    { label: " ", value: (_u, v) => (v == null ? "" : new Date(v * 1000).toISOString().slice(0, 10)) },
    ...data.series.map((s, i) => ({
      label: s.label,
      stroke: PALETTE[i % PALETTE.length],
      width: 2,
      points: { size: 4 },
      value: (_u: uPlot, v: number | null) => (v == null ? "" : formatCompact(v)),
    })),
  ];
  const plot = new uPlot(
    {
      width: widthOf(container),
      height: HEIGHT,
      series,
      scales: { x: { time: true } },
      axes: [
        { stroke: "#5b6475", grid: { stroke: "#eef0f4" }, ticks: { stroke: "#dfe3ea" } },
        {
          stroke: "#5b6475",
          grid: { stroke: "#eef0f4" },
          ticks: { stroke: "#dfe3ea" },
          size: 56,
          values: (_u, values) => values.map((v) => formatCompact(v)),
        },
      ],
      legend: { live: true },
      cursor: { points: { size: 7 } },
      plugins: [shadeProvisional(options.provisionalFrom)],
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
    },
    [data.days.map(daySeconds), ...data.series.map((s) => s.values)],
    container,
  );
  const observer = new ResizeObserver(() => plot.setSize({ width: widthOf(container), height: HEIGHT }));
  observer.observe(container);
  charts.set(id, { plot, observer });
}

export function destroyChart(id: string): void {
  const chart = charts.get(id);
  if (!chart) return;
  chart.observer.disconnect();
  chart.plot.destroy();
  charts.delete(id);
  recordChart(id, undefined);
}
