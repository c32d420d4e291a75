// A ranked list drawn as horizontal bars: plain HTML (an ordered list, readable as text by
// screen readers), each bar's length its share of the largest value.
import { recordList } from "./debug.js";
import { h, replaceChildren } from "./dom.js";
import { formatWhole } from "./format.js";

export interface Ranked {
  label: string;
  value: number;
}

/** Adds up `entries` by label and returns the largest `top`, largest first (ties by label). */
export function rank(entries: Iterable<Ranked>, top: number): Ranked[] {
  const totals = new Map<string, number>();
  for (const { label, value } of entries) totals.set(label, (totals.get(label) ?? 0) + value);
  return [...totals]
    .map(([label, value]) => ({ label, value }))
    .sort((a, b) => b.value - a.value || a.label.localeCompare(b.label))
    .slice(0, top);
}

export function drawBars(id: string, container: HTMLElement, items: Ranked[], unit: string): void {
  recordList(id, { items });
  const largest = Math.max(1, ...items.map((i) => i.value));
  const list = h("ol", { class: "bars", "data-list": id });
  for (const item of items) {
    const bar = h("span", { class: "bar", "aria-hidden": "true" });
    bar.style.setProperty("--share", String(item.value / largest));
    list.append(
      h(
        "li",
        { title: `${item.label}: ${formatWhole(item.value)} ${unit}` },
        h("span", { class: "bar-label" }, item.label),
        h("span", { class: "bar-track" }, bar),
        h("span", { class: "bar-value" }, formatWhole(item.value)),
      ),
    );
  }
  replaceChildren(container, list);
}
