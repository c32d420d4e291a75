// A local HTTP server that follows E2B's documented sandbox API (https://e2b.dev/docs/api-reference)
// closely enough to test our client and provisioning worker against it, without the network:
//
// - Platform API (X-API-Key): POST /sandboxes (201 Sandbox), GET /sandboxes/{sandboxID}
//   (SandboxDetail), DELETE /sandboxes/{sandboxID} (204, the sandbox killed),
//   GET /v2/sandboxes?metadata=k%3Dv[&state=running&state=paused] (ListedSandbox[], running ones
//   unless states are given); errors are
//   {code, message} with the HTTP status.
// - envd on the shared sandbox host: POST /process.Process/Start, a Connect server stream
//   (application/connect+json envelopes), routed by E2b-Sandbox-Id / E2b-Sandbox-Port and
//   authorized by X-Access-Token; the user comes as Basic auth. It answers ProcessEvents
//   (start, data with base64 stdout/stderr, end with exitCode/exited/status) and an
//   end-of-stream message, which carries the error when the RPC fails.
//
// It does not run commands: each Start goes to `onCommand`, which the test sets to say what the
// command printed and how it exited (or to hold it, to stop a worker mid-step). Every request
// is recorded in `requests`.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";

export const E2B_TEST_API_KEY = "e2b_test_0123456789abcdef";
export const ENVD_PORT = "49983";

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  body: any;
}

export interface CommandCall {
  sandboxId: string;
  /** The Basic-auth user the command runs as. */
  user: string | undefined;
  cmd: string;
  args: string[];
  envs: Record<string, string>;
  cwd: string | undefined;
}

export type CommandOutcome =
  | { exitCode: number; stdout?: string; stderr?: string }
  /** The RPC itself fails: Connect end-of-stream error. */
  | { rpcError: { code: string; message: string } };

export interface FakeSandbox {
  sandboxID: string;
  templateID: string;
  envdAccessToken: string;
  metadata: Record<string, string>;
  startedAt: string;
  /** Running unless a test says it paused (autoPause after its timeout). */
  state?: "running" | "paused";
}

export interface E2bApiTestServer {
  readonly url: string;
  readonly apiKey: string;
  readonly requests: RecordedRequest[];
  readonly commands: CommandCall[];
  readonly sandboxes: Map<string, FakeSandbox>;
  /** Decides each command's outcome; default: exit 0 with "ok" on stdout. */
  onCommand: (call: CommandCall) => CommandOutcome | Promise<CommandOutcome>;
  /** The next platform call matching "METHOD /path-prefix" answers this status and message. */
  failNext(route: string, status: number, message: string): void;
  /** Runs after the sandbox is created and before the answer is sent (to stop a worker there). */
  afterCreate: ((sandbox: FakeSandbox) => Promise<void>) | undefined;
  /** Requests whose path starts with the prefix (and method, when given as "METHOD /path"). */
  calls(route: string): RecordedRequest[];
  close(): Promise<void>;
}

function envelope(payload: unknown, flags = 0): Buffer {
  const json = Buffer.from(JSON.stringify(payload));
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(json.length, 1);
  return Buffer.concat([head, json]);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

const sendError = (res: ServerResponse, status: number, message: string) =>
  sendJson(res, status, { code: status, message });

export async function startE2bApiTestServer(): Promise<E2bApiTestServer> {
  const requests: RecordedRequest[] = [];
  const commands: CommandCall[] = [];
  const sandboxes = new Map<string, FakeSandbox>();
  const failures: { route: string; status: number; message: string }[] = [];
  const matches = (route: string, method: string, path: string) => {
    const [m, p] = route.includes(" ") ? route.split(" ", 2) : [undefined, route];
    return (m === undefined || m === method) && path.startsWith(p!);
  };

  const state: E2bApiTestServer = {
    url: "",
    apiKey: E2B_TEST_API_KEY,
    requests,
    commands,
    sandboxes,
    onCommand: () => ({ exitCode: 0, stdout: "ok\n" }),
    failNext: (route, status, message) => void failures.push({ route, status, message }),
    afterCreate: undefined,
    calls: (route) => requests.filter((r) => matches(route, r.method, r.path)),
    close: async () => {},
  };

  const sandboxJson = (s: FakeSandbox) => ({
    templateID: s.templateID,
    sandboxID: s.sandboxID,
    clientID: "test-client",
    envdVersion: "0.2.0",
    envdAccessToken: s.envdAccessToken,
    // Null: the client must use its configured sandbox URL (this server) rather than a domain.
    domain: null,
  });

  async function platform(req: IncomingMessage, res: ServerResponse, url: URL, body: any): Promise<void> {
    if (req.headers["x-api-key"] !== E2B_TEST_API_KEY) return sendError(res, 401, "Invalid API key");
    const failure = failures.findIndex((f) => matches(f.route, req.method!, url.pathname));
    if (failure >= 0) {
      const [f] = failures.splice(failure, 1);
      return sendError(res, f!.status, f!.message);
    }
    const one = /^\/sandboxes\/([^/]+)$/.exec(url.pathname);
    if (req.method === "POST" && url.pathname === "/sandboxes") {
      if (typeof body?.templateID !== "string" || body.templateID === "")
        return sendError(res, 400, "templateID is required");
      const sandbox: FakeSandbox = {
        sandboxID: `i${randomBytes(10).toString("hex")}`,
        templateID: body.templateID,
        envdAccessToken: randomBytes(16).toString("hex"),
        metadata: body.metadata ?? {},
        startedAt: new Date().toISOString(),
      };
      sandboxes.set(sandbox.sandboxID, sandbox);
      if (state.afterCreate) await state.afterCreate(sandbox);
      return sendJson(res, 201, sandboxJson(sandbox));
    }
    if (req.method === "GET" && one) {
      const sandbox = sandboxes.get(decodeURIComponent(one[1]!));
      if (!sandbox) return sendError(res, 404, `sandbox "${one[1]}" doesn't exist or you don't have access to it`);
      return sendJson(res, 200, {
        ...sandboxJson(sandbox),
        startedAt: sandbox.startedAt,
        endAt: sandbox.startedAt,
        cpuCount: 2,
        memoryMB: 512,
        diskSizeMB: 1024,
        metadata: sandbox.metadata,
        state: "running",
      });
    }
    if (req.method === "DELETE" && one) {
      // Kill: 204, or 404 for a sandbox that is not there (never was, or already killed).
      if (!sandboxes.delete(decodeURIComponent(one[1]!)))
        return sendError(res, 404, `sandbox "${one[1]}" doesn't exist or you don't have access to it`);
      res.writeHead(204).end();
      return;
    }
    if (req.method === "GET" && url.pathname === "/v2/sandboxes") {
      const wanted = new URLSearchParams(url.searchParams.get("metadata") ?? "");
      // `state` may repeat; without it only running sandboxes are listed.
      const states = url.searchParams.getAll("state");
      const listed = [...sandboxes.values()].filter(
        (s) =>
          [...wanted].every(([k, v]) => s.metadata[k] === v) &&
          (states.length === 0 ? ["running"] : states).includes(s.state ?? "running"),
      );
      return sendJson(
        res,
        200,
        listed.map((s) => ({
          templateID: s.templateID,
          sandboxID: s.sandboxID,
          clientID: "test-client",
          startedAt: s.startedAt,
          endAt: s.startedAt,
          cpuCount: 2,
          memoryMB: 512,
          diskSizeMB: 1024,
          metadata: s.metadata,
          state: s.state ?? "running",
          envdVersion: "0.2.0",
        })),
      );
    }
    return sendError(res, 404, `no route ${req.method} ${url.pathname}`);
  }

  async function envd(req: IncomingMessage, res: ServerResponse, raw: Buffer): Promise<void> {
    const sandbox = sandboxes.get(String(req.headers["e2b-sandbox-id"] ?? ""));
    if (!sandbox || req.headers["e2b-sandbox-port"] !== ENVD_PORT)
      return sendError(res, 502, "The sandbox was not found");
    if (req.headers["x-access-token"] !== sandbox.envdAccessToken)
      return sendJson(res, 401, { code: "unauthenticated", message: "invalid access token" });
    if (req.headers["content-type"] !== "application/connect+json" || req.headers["connect-protocol-version"] !== "1") {
      return sendJson(res, 415, { code: "invalid_argument", message: "expected a Connect stream of JSON" });
    }
    if (raw.length < 5 || raw[0] !== 0 || raw.readUInt32BE(1) !== raw.length - 5)
      return sendJson(res, 400, { code: "invalid_argument", message: "malformed envelope" });
    const start = JSON.parse(raw.subarray(5).toString("utf8")) as {
      process?: { cmd?: string; args?: string[]; envs?: Record<string, string>; cwd?: string };
    };
    const auth = /^Basic (.+)$/.exec(String(req.headers.authorization ?? ""));
    const call: CommandCall = {
      sandboxId: sandbox.sandboxID,
      user: auth ? Buffer.from(auth[1]!, "base64").toString("utf8").replace(/:$/, "") : undefined,
      cmd: start.process?.cmd ?? "",
      args: start.process?.args ?? [],
      envs: start.process?.envs ?? {},
      cwd: start.process?.cwd,
    };
    commands.push(call);
    res.writeHead(200, { "content-type": "application/connect+json" });
    res.write(envelope({ event: { start: { pid: 1000 + commands.length } } }));
    res.write(envelope({ event: { keepalive: {} } }));
    const outcome = await state.onCommand(call);
    if (res.destroyed) return;
    if ("rpcError" in outcome) {
      res.end(envelope({ error: outcome.rpcError }, 0x02));
      return;
    }
    if (outcome.stdout)
      res.write(envelope({ event: { data: { stdout: Buffer.from(outcome.stdout).toString("base64") } } }));
    if (outcome.stderr)
      res.write(envelope({ event: { data: { stderr: Buffer.from(outcome.stderr).toString("base64") } } }));
    // Protobuf JSON leaves out zero values, as envd does.
    const end = {
      ...(outcome.exitCode !== 0 ? { exitCode: outcome.exitCode } : {}),
      exited: true,
      status: `exit status ${outcome.exitCode}`,
    };
    res.write(envelope({ event: { end } }));
    res.end(envelope({}, 0x02));
  }

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://e2b.test");
      const raw = await readBody(req);
      const isEnvd = url.pathname.startsWith("/process.Process/");
      let body: any;
      if (!isEnvd && raw.length > 0) {
        try {
          body = JSON.parse(raw.toString("utf8"));
        } catch {
          return sendError(res, 400, "body is not JSON");
        }
      }
      requests.push({
        method: req.method ?? "",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: isEnvd ? undefined : body,
      });
      if (url.pathname === "/process.Process/Start" && req.method === "POST") return envd(req, res, raw);
      return platform(req, res, url, body);
    })().catch((err) => {
      if (!res.headersSent) sendError(res, 500, String(err));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
  return state;
}
