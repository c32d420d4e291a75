// One dashboard panel's states, shown in words and mirrored in its data-state attribute
// (loading, ready, empty, forbidden, error) so that styles and tests read the same thing.
import { ApiError } from "./api.js";
import { byId, h, replaceChildren } from "./dom.js";

export type PanelState = "loading" | "ready" | "empty" | "forbidden" | "error";

/** Raised to the page when the key itself is refused: the page asks for a key again. */
export class KeyRefused extends Error {
  override name = "KeyRefused";
  constructor(readonly detail: string) {
    super(detail);
  }
}

export class Panel {
  readonly section: HTMLElement;
  readonly status: HTMLElement;
  readonly body: HTMLElement;

  constructor(id: string) {
    this.section = byId(id);
    this.status = this.section.querySelector<HTMLElement>(".panel-status") ?? this.section.appendChild(h("p"));
    this.body = this.section.querySelector<HTMLElement>(".panel-body") ?? this.section.appendChild(h("div"));
  }

  private set(state: PanelState, message: string): void {
    this.section.dataset.state = state;
    this.section.setAttribute("aria-busy", String(state === "loading"));
    replaceChildren(this.status, message);
    this.status.hidden = message === "";
  }

  /**
   * Runs one load: loading while it runs (unless quiet); then ready, or empty when `render` says there was
   * nothing to show, or the failure in the API's words. A 401 is the page's business (KeyRefused).
   */
  async load<T>(
    fetchData: () => Promise<T>,
    render: (data: T) => boolean,
    emptyText: string,
    { quiet = false } = {},
  ): Promise<void> {
    // A quiet load (a background refresh) leaves what is shown until the new data arrives.
    if (!quiet) this.set("loading", "Loading…");
    let data: T;
    try {
      data = await fetchData();
    } catch (err) {
      if (err instanceof DOMException && err.name === "AbortError") return;
      this.fail(err);
      return;
    }
    if (render(data)) this.set("ready", "");
    else {
      replaceChildren(this.body);
      this.set("empty", emptyText);
    }
  }

  fail(err: unknown): void {
    replaceChildren(this.body);
    if (err instanceof ApiError && err.status === 401) {
      this.set("error", "The API key was refused.");
      throw new KeyRefused(err.detail);
    }
    if (err instanceof ApiError && err.status === 403) {
      // The page says why once, above the panels (main.ts listens); each panel says it briefly.
      this.set("forbidden", "Not available to this key's role (403).");
      this.section.dispatchEvent(new CustomEvent("forbidden", { bubbles: true, detail: err.detail }));
      return;
    }
    const text =
      err instanceof ApiError ? `${err.status === 0 ? "" : `${err.status} `}${err.title}: ${err.detail}` : String(err);
    this.set("error", `Could not load: ${text}`);
  }
}
