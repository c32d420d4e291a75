// A client for E2B's sandbox API (https://e2b.dev/docs/api-reference): the platform API
// (POST /sandboxes, GET /sandboxes/{sandboxID}, GET /v2/sandboxes) authenticated with
// X-API-Key, and commands in a sandbox through envd's process.Process/Start (e2b-envd.ts).
import type { E2bConfig } from "./config.js";
import { E2bError, runEnvdProcess, type ProcessResult, type StartProcess } from "./e2b-envd.js";

/** envd's port inside every sandbox; the shared sandbox host routes to it by header. */
export const ENVD_PORT = 49983;
const CONTROL_TIMEOUT_MS = 60_000;

/** What is needed to reach a sandbox's envd. */
export interface SandboxAccess {
  sandboxId: string;
  /** The sandbox's domain (e.g. "e2b.app"), when E2B reports one. */
  domain: string | null;
  envdAccessToken: string | null;
}

/** A sandbox's state in E2B's lists: paused ones (autoPause) are kept until killed. */
export type SandboxState = "running" | "paused";

export interface CreateSandboxInit {
  templateID: string;
  /** Seconds the sandbox lives before it pauses (autoPause) or stops. */
  timeout: number;
  autoPause: boolean;
  metadata: Record<string, string>;
}

interface SandboxJson {
  sandboxID?: unknown;
  domain?: unknown;
  envdAccessToken?: unknown;
}

function accessOf(body: SandboxJson, call: string): SandboxAccess {
  if (typeof body.sandboxID !== "string" || body.sandboxID === "")
    throw new E2bError(`E2B ${call} answered without a sandboxID`);
  return {
    sandboxId: body.sandboxID,
    domain: typeof body.domain === "string" && body.domain !== "" ? body.domain : null,
    envdAccessToken:
      typeof body.envdAccessToken === "string" && body.envdAccessToken !== "" ? body.envdAccessToken : null,
  };
}

/** E2B errors are {code, message}; anything else is summarized. */
async function describeFailure(res: Response): Promise<string> {
  const text = await res.text().catch(() => "");
  try {
    const body = JSON.parse(text) as { message?: unknown };
    if (typeof body.message === "string" && body.message !== "") return body.message.slice(0, 500);
  } catch {
    // not JSON
  }
  return text.trim().slice(0, 200) || res.statusText || "no details";
}

export class E2bClient {
  constructor(private readonly config: E2bConfig) {}

  private async call(method: string, path: string, signal: AbortSignal, body?: unknown): Promise<unknown> {
    const res = await this.send(method, path, signal, body);
    try {
      return await res.json();
    } catch {
      throw new E2bError(`E2B ${method} ${path.split("?")[0]} answered ${res.status} with a body that is not JSON`);
    }
  }

  /** The answer of a successful call (2xx), else an E2bError naming the call and E2B's reason. */
  private async send(
    method: string,
    path: string,
    signal: AbortSignal,
    body?: unknown,
    alsoOk: readonly number[] = [],
  ): Promise<Response> {
    const call = `${method} ${path.split("?")[0]}`;
    let res: Response;
    try {
      res = await fetch(this.config.apiUrl + path, {
        method,
        headers: {
          "x-api-key": this.config.apiKey,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.any([signal, AbortSignal.timeout(CONTROL_TIMEOUT_MS)]),
      });
    } catch (err) {
      if (signal.aborted) throw err;
      throw new E2bError(
        `E2B ${call} failed: ${(err as Error).name === "TimeoutError" ? "no answer within 60 s" : (((err as Error).cause as Error | undefined)?.message ?? (err as Error).message)}`,
      );
    }
    if (!res.ok && !alsoOk.includes(res.status))
      throw new E2bError(`E2B ${call} answered ${res.status}: ${await describeFailure(res)}`);
    return res;
  }

  async createSandbox(init: CreateSandboxInit, signal: AbortSignal): Promise<SandboxAccess> {
    return accessOf((await this.call("POST", "/sandboxes", signal, init)) as SandboxJson, "POST /sandboxes");
  }

  async getSandbox(sandboxId: string, signal: AbortSignal): Promise<SandboxAccess> {
    return accessOf(
      (await this.call("GET", `/sandboxes/${encodeURIComponent(sandboxId)}`, signal)) as SandboxJson,
      `GET /sandboxes/${sandboxId}`,
    );
  }

  /** Kills the sandbox (DELETE /sandboxes/{sandboxID}): true, or false when E2B has no such sandbox (404). */
  async killSandbox(sandboxId: string, signal: AbortSignal): Promise<boolean> {
    const res = await this.send("DELETE", `/sandboxes/${encodeURIComponent(sandboxId)}`, signal, undefined, [404]);
    await res.body?.cancel();
    return res.status !== 404;
  }

  /**
   * IDs of the sandboxes whose metadata holds every given pair, in the given states (E2B lists
   * running ones unless asked for others).
   */
  async findSandboxes(
    metadata: Record<string, string>,
    signal: AbortSignal,
    states: readonly SandboxState[] = ["running"],
  ): Promise<string[]> {
    // The metadata parameter is itself a query string ("k=v&k2=v2"), URL-encoded as a whole.
    const query = new URLSearchParams(metadata).toString();
    const wanted = states.map((state) => `&state=${state}`).join("");
    const body = await this.call("GET", `/v2/sandboxes?metadata=${encodeURIComponent(query)}${wanted}`, signal);
    if (!Array.isArray(body)) throw new E2bError("E2B GET /v2/sandboxes answered with something other than a list");
    return body.flatMap((s: SandboxJson) => (typeof s?.sandboxID === "string" ? [s.sandboxID] : []));
  }

  /** Runs a command in the sandbox and waits for it to end. */
  async run(
    sandbox: SandboxAccess,
    process: StartProcess,
    signal: AbortSignal,
    timeoutMs: number,
  ): Promise<ProcessResult> {
    const baseUrl = this.config.sandboxUrl ?? `https://sandbox.${sandbox.domain ?? domainOf(this.config.apiUrl)}`;
    return runEnvdProcess({
      baseUrl,
      sandboxId: sandbox.sandboxId,
      port: ENVD_PORT,
      accessToken: sandbox.envdAccessToken,
      process,
      signal,
      timeoutMs,
    });
  }
}

/** "https://api.e2b.app" → "e2b.app": the sandbox domain when a sandbox does not report one. */
function domainOf(apiUrl: string): string {
  const host = new URL(apiUrl).hostname;
  return host.startsWith("api.") ? host.slice(4) : host;
}
