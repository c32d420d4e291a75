// Readiness by repository: the organization's reports (newest first, paged with startAfter),
// the latest per repository with its score and the change since that repository's report before.
import type { ReadinessReport } from "../api-types.js";
import type { ApiClient } from "../api.js";
import { h, replaceChildren } from "../dom.js";
import { formatAgo, formatInstant, formatPercent } from "../format.js";
import { Panel } from "../panel.js";

const PATH = "/api/organization/maturity-level-reports";
const PAGE = 100;
/** Enough history for any organization's latest report per repository in practice, bounded. */
const MAX_PAGES = 10;

/** Passing sub-applications over evaluated ones, over every criterion (the API's `score` when it gives one). */
export function scoreOf(report: ReadinessReport): number {
  if (typeof report.score === "number") return report.score;
  let passing = 0;
  let evaluated = 0;
  for (const c of Object.values(report.report)) {
    passing += c.numerator;
    evaluated += c.denominator;
  }
  return evaluated === 0 ? 0 : passing / evaluated;
}

interface Repository {
  url: string;
  latest: ReadinessReport;
  previous?: ReadinessReport;
  reports: number;
}

async function allReports(api: ApiClient, signal: AbortSignal): Promise<ReadinessReport[]> {
  const reports: ReadinessReport[] = [];
  let startAfter: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const answer = await api.get<{ reports: ReadinessReport[] }>(PATH, { limit: PAGE, startAfter }, signal);
    reports.push(...answer.reports);
    if (answer.reports.length < PAGE) break;
    startAfter = answer.reports[answer.reports.length - 1]!.reportId;
  }
  return reports;
}

function byRepository(reports: ReadinessReport[]): Repository[] {
  const repos = new Map<string, Repository>();
  for (const report of [...reports].sort((a, b) => b.createdAt - a.createdAt)) {
    const repo = repos.get(report.repoUrl);
    if (!repo) repos.set(report.repoUrl, { url: report.repoUrl, latest: report, reports: 1 });
    else {
      repo.previous ??= report;
      repo.reports += 1;
    }
  }
  return [...repos.values()].sort((a, b) => scoreOf(b.latest) - scoreOf(a.latest) || a.url.localeCompare(b.url));
}

function change(repo: Repository): HTMLElement {
  if (!repo.previous) return h("span", { class: "muted" }, "first report");
  const points = Math.round((scoreOf(repo.latest) - scoreOf(repo.previous)) * 100);
  if (points === 0) return h("span", { class: "muted" }, "no change");
  return h("span", { class: points > 0 ? "up" : "down" }, `${points > 0 ? "▲ +" : "▼ "}${points} pts`);
}

function criteria(report: ReadinessReport): string {
  const all = Object.values(report.report);
  const passing = all.filter((c) => c.numerator === c.denominator).length;
  return `${passing} of ${all.length}`;
}

export function loadReadiness(api: ApiClient, signal: AbortSignal): Promise<void> {
  const panel = new Panel("readiness");
  return panel.load(
    () => allReports(api, signal),
    (reports) => {
      const repos = byRepository(reports);
      if (repos.length === 0) return false;
      const rows = repos.map((repo) => {
        const score = scoreOf(repo.latest);
        const meter = h("span", { class: "meter", "aria-hidden": "true" }, h("span", { class: "meter-fill" }));
        (meter.firstChild as HTMLElement).style.setProperty("--share", String(score));
        const where = [repo.latest.branch, repo.latest.commitHash?.slice(0, 7)].filter(Boolean).join(" @ ");
        return h(
          "tr",
          { "data-repo": repo.url, "data-score": String(score) },
          h(
            "th",
            { scope: "row" },
            h("span", { class: "repo" }, repo.url.replace(/^https?:\/\//, "")),
            where ? h("span", { class: "muted small" }, where) : null,
          ),
          h("td", {}, h("span", { class: "score" }, meter, h("span", {}, formatPercent(score)))),
          h("td", { class: "num" }, criteria(repo.latest)),
          h("td", {}, change(repo)),
          h("td", { class: "optional", title: formatInstant(repo.latest.createdAt) }, formatAgo(repo.latest.createdAt)),
          h("td", { class: "num optional" }, repo.reports),
        );
      });
      replaceChildren(
        panel.body,
        h(
          "div",
          { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Readiness table" },
          h(
            "table",
            { class: "data-table", id: "readiness-table" },
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                h("th", { scope: "col" }, "Repository"),
                h("th", { scope: "col" }, "Score"),
                h("th", { scope: "col", class: "num" }, "Criteria passing"),
                h("th", { scope: "col" }, "Since previous"),
                h("th", { scope: "col", class: "optional" }, "Evaluated"),
                h("th", { scope: "col", class: "num optional" }, "Reports"),
              ),
            ),
            h("tbody", {}, ...rows),
          ),
        ),
      );
      return true;
    },
    "No readiness reports yet.",
  );
}
