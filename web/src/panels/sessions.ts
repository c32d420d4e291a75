// The organization's sessions (GET /api/v0/sessions, newest first) with their status. The list
// does not carry status, so each shown session is read once (GET /sessions/{id}); after that the
// sessions that are pending or running are followed live on their event streams
// (GET /sessions/{id}/events, Server-Sent Events; a stream carries the changes after it opens, so
// the session is read once more when it has opened), and the list is read again every half
// minute for new sessions. At most LIVE_STREAMS streams are open at once: a browser opens only six
// HTTP/1.1 connections to a server, and the other panels need theirs.
import type { Session, SessionEvent, SessionListItem } from "../api-types.js";
import type { ApiClient } from "../api.js";
import { byId, h, replaceChildren } from "../dom.js";
import { formatAgo, formatInstant, formatWhole } from "../format.js";
import { Panel } from "../panel.js";

const SHOWN = 15;
const LIVE_STREAMS = 2;
const REFRESH_MS = 30_000;
const READS_AT_ONCE = 4;

/** Runs `work` over `items`, at most `n` at a time, keeping their order. */
async function mapLimited<T, R>(items: T[], n: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await work(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return results;
}

const ACTIVE = new Set(["pending", "running"]);

class SessionsPanel {
  private readonly panel = new Panel("sessions");
  private sessions: Session[] = [];
  private readonly streams = new Map<string, AbortController>();
  /** Sessions whose stream is open (each change of theirs arrives as it happens). */
  private readonly live = new Set<string>();
  private timer: number | undefined;

  constructor(
    private readonly api: ApiClient,
    private readonly signal: AbortSignal,
  ) {
    signal.addEventListener("abort", () => {
      window.clearTimeout(this.timer);
      for (const stream of this.streams.values()) stream.abort();
    });
  }

  async refresh(quiet = false): Promise<void> {
    window.clearTimeout(this.timer);
    await this.panel.load(
      async () => {
        const { sessions } = await this.api.get<{ sessions: SessionListItem[] }>(
          "/api/v0/sessions",
          { limit: SHOWN },
          this.signal,
        );
        return mapLimited(sessions, READS_AT_ONCE, (s) =>
          this.api.get<Session>(`/api/v0/sessions/${encodeURIComponent(s.sessionId)}`, {}, this.signal),
        );
      },
      (sessions) => {
        this.sessions = sessions;
        this.follow();
        this.render();
        return sessions.length > 0;
      },
      "No sessions yet.",
      { quiet },
    );
    // A refused key in a background refresh shows in the panel; the page asks again on its next load.
    if (!this.signal.aborted) this.timer = window.setTimeout(() => void this.refresh(true).catch(() => {}), REFRESH_MS);
  }

  /** Opens streams for active sessions (up to LIVE_STREAMS) and closes those of sessions now idle. */
  private follow(): void {
    const active = this.sessions.filter((s) => ACTIVE.has(s.status)).slice(0, LIVE_STREAMS);
    const wanted = new Set(active.map((s) => s.sessionId));
    for (const [id, stream] of this.streams) {
      if (!wanted.has(id)) {
        stream.abort();
        this.streams.delete(id);
      }
    }
    for (const id of wanted) {
      if (this.streams.has(id)) continue;
      const stream = new AbortController();
      this.signal.addEventListener("abort", () => stream.abort());
      this.streams.set(id, stream);
      const path = `/api/v0/sessions/${encodeURIComponent(id)}`;
      this.api
        .events(
          `${path}/events`,
          (data) => this.onEvent(data as SessionEvent),
          stream.signal,
          () => {
            this.live.add(id);
            // What changed between the first read and the stream's opening.
            this.api.get<Session>(path, {}, stream.signal).then(
              (session) => this.update(session),
              () => {},
            );
          },
        )
        .catch(() => {
          // The stream ended or failed: the next refresh reads the status and opens it again if needed.
        })
        .finally(() => {
          this.live.delete(id);
          if (this.streams.get(id) === stream) this.streams.delete(id);
          this.render();
          this.renderLive();
        });
    }
    this.renderLive();
  }

  private update(latest: Session): void {
    const i = this.sessions.findIndex((s) => s.sessionId === latest.sessionId);
    if (i < 0) return;
    this.sessions[i] = latest;
    this.render();
    if (!ACTIVE.has(latest.status)) this.follow();
  }

  private onEvent(event: SessionEvent): void {
    const session = this.sessions.find((s) => s.sessionId === event.sessionId);
    if (!session) return;
    if (event.type === "session.status_changed" && event.status) session.status = event.status as Session["status"];
    if (event.type === "message.created") session.messageCount += 1;
    session.updatedAt = Math.max(session.updatedAt, event.createdAt);
    this.render();
    if (!ACTIVE.has(session.status)) this.follow();
  }

  private renderLive(): void {
    const live = byId("sessions-live");
    live.dataset.streams = String(this.streams.size);
    replaceChildren(
      live,
      this.streams.size > 0
        ? `Live: following ${this.streams.size} active session${this.streams.size === 1 ? "" : "s"}`
        : "Refreshes every 30 s",
    );
  }

  private render(): void {
    const rows = this.sessions.map((s) =>
      h(
        "tr",
        { "data-session": s.sessionId, "data-status": s.status, "data-live": this.live.has(s.sessionId) },
        h(
          "th",
          { scope: "row" },
          s.title || h("span", { class: "muted" }, "Untitled"),
          h("span", { class: "muted small mono" }, s.sessionId),
        ),
        h("td", {}, h("span", { class: `status status-${s.status}` }, s.status)),
        h("td", { class: "num optional" }, formatWhole(s.messageCount)),
        h("td", { title: formatInstant(s.updatedAt) }, formatAgo(s.updatedAt)),
        h("td", { class: "optional", title: formatInstant(s.createdAt) }, formatInstant(s.createdAt).slice(0, 10)),
      ),
    );
    replaceChildren(
      this.panel.body,
      h(
        "div",
        { class: "table-scroll", tabindex: "0", role: "region", "aria-label": "Sessions table" },
        h(
          "table",
          { class: "data-table", id: "sessions-table" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { scope: "col" }, "Session"),
              h("th", { scope: "col" }, "Status"),
              h("th", { scope: "col", class: "num optional" }, "Messages"),
              h("th", { scope: "col" }, "Updated"),
              h("th", { scope: "col", class: "optional" }, "Created"),
            ),
          ),
          h("tbody", {}, ...rows),
        ),
      ),
    );
  }
}

export function loadSessions(api: ApiClient, signal: AbortSignal): Promise<void> {
  return new SessionsPanel(api, signal).refresh();
}
