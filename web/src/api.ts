// Calls to the agentplane REST API on this page's origin, with the key as a bearer token. Every
// failure becomes an ApiError carrying the status and the API's own detail text
// ({title, detail, status, requestId}), so a panel can say what went wrong in the API's words.
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly requestId?: string,
  ) {
    super(`${status} ${title}: ${detail}`);
  }
}

export type Query = Record<string, string | number | undefined>;

export function pathWithQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
  const text = params.toString();
  return text === "" ? path : `${path}?${text}`;
}

async function errorOf(response: Response): Promise<ApiError> {
  let body: { title?: unknown; detail?: unknown; requestId?: unknown } = {};
  try {
    body = await response.json();
  } catch {
    // Not the API's JSON error (a proxy's page, a cut connection): the status says enough.
  }
  return new ApiError(
    response.status,
    typeof body.title === "string" ? body.title : response.statusText || "Error",
    typeof body.detail === "string" ? body.detail : `the server answered ${response.status}`,
    typeof body.requestId === "string" ? body.requestId : undefined,
  );
}

export class ApiClient {
  constructor(private readonly key: string) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${this.key}`, ...extra };
  }

  async get<T>(path: string, query: Query = {}, signal?: AbortSignal): Promise<T> {
    let response: Response;
    try {
      // no-cache: a stored answer is used only after the server confirms it (304) for this key.
      // The analytics answers are cacheable (private, max-age=300) and the browser's cache does
      // not key by Authorization, so without it another key's answer could be shown.
      response = await fetch(pathWithQuery(path, query), { headers: this.headers(), signal, cache: "no-cache" });
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new ApiError(0, "Network error", "the server could not be reached");
    }
    if (!response.ok) throw await errorOf(response);
    return (await response.json()) as T;
  }

  /**
   * Reads a Server-Sent Events stream (EventSource cannot send an Authorization header) and
   * calls `onEvent` with each event's parsed data until the stream ends or `signal` aborts.
   * `onConnected` runs when the stream is open: every change from then on arrives as an event.
   */
  async events(
    path: string,
    onEvent: (data: unknown) => void,
    signal: AbortSignal,
    onConnected: () => void = () => {},
  ): Promise<void> {
    const response = await fetch(path, { headers: this.headers({ accept: "text/event-stream" }), signal });
    if (!response.ok || !response.body) throw await errorOf(response);
    onConnected();
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += value;
      let end = buffered.indexOf("\n\n");
      while (end >= 0) {
        const record = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const data = record
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).trimStart())
          .join("\n");
        if (data !== "") onEvent(JSON.parse(data));
        end = buffered.indexOf("\n\n");
      }
    }
  }
}
