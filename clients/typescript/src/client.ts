// createAgentplaneClient's body, shared by the Node and browser entry points (index.ts,
// browser.ts), which differ only in the transports they can build.
import { type Client, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { connectionLossInterceptor, type RetryOptions, retryInterceptor } from "./retry.js";
import { PUBLIC_SERVICES, type PublicServices } from "./services.js";

/** The wire protocol: Connect (default), gRPC (Node only: browsers cannot speak it) or gRPC-Web. */
export type Protocol = "connect" | "grpc" | "grpc-web";

export const PROTOCOLS: readonly Protocol[] = ["connect", "grpc", "grpc-web"];

/** The server's own default deadline (REQUEST_TIMEOUT_MS), so a call waits no longer than the server would work on it. */
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface AgentplaneClientOptions {
  /** The server's public gRPC address (GRPC_PORT, or Envoy's gRPC-Web listener), e.g. http://127.0.0.1:8081. */
  readonly baseUrl: string;
  /** An API key (apk_…) or an access token, sent as `Authorization: Bearer …` on every call. */
  readonly apiKey: string;
  /** Default "connect". */
  readonly protocol?: Protocol;
  /**
   * Each call's deadline in ms, its retries and waits included (default 30 000); a call's own
   * `{ timeoutMs }` overrides it, and 0 means none. Sent to the server, which stops working on a
   * call whose deadline passed.
   */
  readonly timeoutMs?: number;
  /** Retries of UNAVAILABLE (retry.ts says which calls); false for none. */
  readonly retry?: RetryOptions | false;
  /** Binary protobuf (default) or JSON for Connect calls; gRPC and gRPC-Web are always binary here. */
  readonly useBinaryFormat?: boolean;
  /** More interceptors; they run inside the retries, once per attempt. */
  readonly interceptors?: readonly Interceptor[];
}

/** What a transport factory receives: everything but the protocol is the same for all. */
export interface TransportSettings {
  readonly baseUrl: string;
  readonly protocol: Protocol;
  readonly defaultTimeoutMs: number | undefined;
  readonly useBinaryFormat: boolean;
  readonly interceptors: Interceptor[];
}

export type TransportFactory = (settings: TransportSettings) => Transport;

/** One typed client per public service, and the transport they share. */
export type AgentplaneClient = { readonly [K in keyof PublicServices]: Client<PublicServices[K]> } & {
  readonly transport: Transport;
};

/** Sends the credential on every call. */
export function bearerInterceptor(apiKey: string): Interceptor {
  const value = `Bearer ${apiKey}`;
  return (next) => (req) => {
    req.header.set("authorization", value);
    return next(req);
  };
}

function checkOptions(options: AgentplaneClientOptions): void {
  let url: URL;
  try {
    url = new URL(options.baseUrl);
  } catch {
    throw new Error(`baseUrl must be an http or https URL, got "${options.baseUrl}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new Error(`baseUrl must be an http or https URL, got "${options.baseUrl}"`);
  if (typeof options.apiKey !== "string" || options.apiKey === "") throw new Error("apiKey is required");
  if (options.protocol !== undefined && !PROTOCOLS.includes(options.protocol))
    throw new Error(`protocol must be one of ${PROTOCOLS.join(", ")}, got "${options.protocol}"`);
  const timeout = options.timeoutMs;
  if (timeout !== undefined && (!Number.isFinite(timeout) || timeout < 0))
    throw new Error(`timeoutMs must be 0 (no deadline) or a positive number of ms, got ${timeout}`);
}

export function createAgentplaneClientWith(
  makeTransport: TransportFactory,
  options: AgentplaneClientOptions,
): AgentplaneClient {
  checkOptions(options);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // Outermost first: the credential is set once; the retries see a lost connection as
  // UNAVAILABLE, and wrap the caller's interceptors.
  const interceptors: Interceptor[] = [bearerInterceptor(options.apiKey)];
  if (options.retry !== false) interceptors.push(retryInterceptor(options.retry));
  interceptors.push(connectionLossInterceptor(), ...(options.interceptors ?? []));
  const transport = makeTransport({
    baseUrl: options.baseUrl,
    protocol: options.protocol ?? "connect",
    // Connect's transports take 0 or less as "no deadline" only per call; unset means none.
    defaultTimeoutMs: timeoutMs > 0 ? timeoutMs : undefined,
    useBinaryFormat: options.useBinaryFormat ?? true,
    interceptors,
  });
  return {
    transport,
    analytics: createClient(PUBLIC_SERVICES.analytics, transport),
    readiness: createClient(PUBLIC_SERVICES.readiness, transport),
    sessions: createClient(PUBLIC_SERVICES.sessions, transport),
    computers: createClient(PUBLIC_SERVICES.computers, transport),
    organization: createClient(PUBLIC_SERVICES.organization, transport),
  };
}
