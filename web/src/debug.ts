// A read-only view of what the charts and lists currently show, for tests and for anyone
// checking the page against the API: `window.agentplaneDashboard.charts[id]` holds a chart's
// days and, per series, its values in day order (what is drawn, before any formatting);
// `.lists[id]` a bar list's labels and values in the order shown. Nothing reads it back: it is
// a mirror, updated each time a chart or list is drawn.
export interface ChartData {
  days: string[];
  series: { label: string; values: number[] }[];
}

export interface ListData {
  items: { label: string; value: number }[];
}

interface DashboardDebug {
  version: 1;
  charts: Record<string, ChartData>;
  lists: Record<string, ListData>;
}

declare global {
  interface Window {
    agentplaneDashboard: DashboardDebug;
  }
}

window.agentplaneDashboard = { version: 1, charts: {}, lists: {} };

export function recordChart(id: string, data: ChartData | undefined): void {
  if (data) window.agentplaneDashboard.charts[id] = data;
  else delete window.agentplaneDashboard.charts[id];
}

export function recordList(id: string, data: ListData | undefined): void {
  if (data) window.agentplaneDashboard.lists[id] = data;
  else delete window.agentplaneDashboard.lists[id];
}
