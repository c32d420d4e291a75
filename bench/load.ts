// The load generator, run as its own process (never inside the service): keeps `connections`
// requests in flight for a warm-up and then a measured period, and prints one JSON line with
// throughput, latency percentiles, errors and its own CPU time.
//
//   HTTP: autocannon (HTTP/1.1 keep-alive, one request in flight per connection); at a fixed
//         rate (--rate), node:http (runPacedHttp says why).
//   HTTP/2: node:http2 client sessions, `connections` streams in flight spread over `channels`
//         sessions (autocannon speaks HTTP/1 only), the same loop as gRPC's; bodies are read, not parsed.
//   gRPC over raw HTTP/2: node:http2 streams carrying pre-encoded gRPC frames, the same loop as
//         HTTP/2's; the answer's grpc-status is read, its message is not decoded.
//   gRPC: @grpc/grpc-js unary calls, `connections` calls in flight spread over `channels`
//         HTTP/2 connections. Requests are encoded once up front and responses are not decoded,
//         like autocannon, which neither builds nor parses JSON: the client's CPU goes to I/O.
//
// Protocol on stdout: a line {"event":"start"} when the measured period begins, then the result.
// Latencies are recorded per response with sub-millisecond precision for both kinds, and the
// percentiles are computed the same way (stats.ts), so the two sides compare like for like.
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { connect as connectH2, type ClientHttp2Session } from "node:http2";
import { pathToFileURL } from "node:url";
import autocannon from "autocannon";
import * as grpc from "@grpc/grpc-js";
import { fromJson, toBinary, type DescService, type JsonValue } from "@bufbuild/protobuf";
import { SessionService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { OrganizationService } from "../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { startStallMonitor } from "./stalls.js";
import { summarize, type LoadResult } from "./stats.js";

export interface HttpLoad {
  kind: "http";
  /** http://host:port */
  url: string;
  method: "GET" | "POST";
  /** Request targets, used in turn (so reads spread over many rows). */
  paths: string[];
  headers: Record<string, string>;
  body?: string;
}

export interface H2Load {
  kind: "h2";
  /** http://host:port (cleartext HTTP/2, prior knowledge) */
  url: string;
  /** GET targets, used in turn. */
  paths: string[];
  headers: Record<string, string>;
  /** HTTP/2 connections the in-flight requests are spread over. */
  channels: number;
}

export interface GrpcLoad {
  kind: "grpc";
  /** host:port */
  address: string;
  service: string;
  method: string;
  /** Request messages in their JSON form, used in turn. */
  requests: JsonValue[];
  metadata: Record<string, string>;
  /** HTTP/2 connections the in-flight calls are spread over. */
  channels: number;
}

/**
 * gRPC unary calls sent as raw HTTP/2 streams (node:http2): the request frames are encoded once,
 * the answer is read (status and grpc-status), not decoded. What a gRPC call costs the server,
 * without @grpc/grpc-js's client in the load generator's CPU.
 */
export interface GrpcH2Load {
  kind: "grpc-h2";
  /** http://host:port (cleartext HTTP/2) */
  url: string;
  service: string;
  method: string;
  /** Request messages in their JSON form, used in turn. */
  requests: JsonValue[];
  metadata: Record<string, string>;
  /** HTTP/2 connections the in-flight calls are spread over. */
  channels: number;
}

export type LoadTarget = HttpLoad | GrpcLoad | H2Load | GrpcH2Load;

export interface LoadSpec {
  target: LoadTarget;
  connections: number;
  /** Requests per second offered over all connections; absent: as fast as answers come (closed loop). */
  rate?: number;
  warmupSeconds: number;
  durationSeconds: number;
}

const SERVICES: Record<string, DescService> = Object.fromEntries(
  [SessionService, OrganizationService].map((s) => [s.typeName, s]),
);

/** Tells the orchestrator the measured period begins, so it samples the server's CPU time now. */
function announceStart(): void {
  process.stdout.write(`${JSON.stringify({ event: "start" })}\n`);
}

class Recorder {
  latencies: number[] = [];
  errors = 0;
  statuses: Record<string, number> = {};
  recording = false;
  record(ok: boolean, status: string, ms: number): void {
    if (!this.recording) return;
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
    if (ok) this.latencies.push(ms);
    else this.errors++;
  }
}

function runAutocannon(
  target: HttpLoad,
  connections: number,
  seconds: number,
  rec: Recorder,
): Promise<{ errors: number }> {
  let next = 0;
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: target.url,
        connections,
        duration: seconds,
        method: target.method,
        headers: { ...target.headers, ...(target.body !== undefined ? { "content-type": "application/json" } : {}) },
        ...(target.body !== undefined ? { body: target.body } : {}),
        requests: [
          {
            setupRequest: (req: Record<string, unknown>) => {
              req.path = target.paths[next++ % target.paths.length];
              return req;
            },
          },
        ],
        timeout: 10,
      },
      (err: Error | null, result: { errors: number; timeouts: number }) =>
        err ? reject(err) : resolve({ errors: result.errors + result.timeouts }),
    );
    instance.on("response", (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      rec.record(statusCode >= 200 && statusCode < 300, String(statusCode), responseTime);
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Keeps `connections` workers calling `call` for `seconds`. With a rate, each worker sends one
 * call per connections/rate seconds, the workers spread evenly over that interval; a slow answer
 * delays only its own worker's next call.
 */
async function drive(spec: LoadSpec, seconds: number, call: (worker: number) => Promise<void>): Promise<void> {
  const stopAt = performance.now() + seconds * 1000;
  const interval = spec.rate !== undefined ? (spec.connections * 1000) / spec.rate : 0;
  await Promise.all(
    Array.from({ length: spec.connections }, async (_, i) => {
      let next = performance.now() + (interval * i) / spec.connections;
      while (performance.now() < stopAt) {
        if (interval > 0) {
          // A slot after the end is not waited for: that would stretch the measured period.
          if (next >= stopAt) break;
          const wait = next - performance.now();
          if (wait > 0) await sleep(wait);
          next += interval;
        }
        await call(i);
      }
    }),
  );
}

/**
 * Warms up (unrecorded), then records `spec.durationSeconds` of `call`s driven by drive(): the
 * latencies, the load generator's own CPU time and the elapsed time, summarized.
 */
async function measure(
  spec: LoadSpec,
  rec: Recorder,
  call: (worker: number) => Promise<void>,
  close: () => void,
): Promise<LoadResult> {
  if (spec.warmupSeconds > 0) await drive(spec, spec.warmupSeconds, call);
  rec.recording = true;
  announceStart();
  const stalls = startStallMonitor();
  const cpu = process.cpuUsage();
  const started = performance.now();
  await drive(spec, spec.durationSeconds, call);
  const elapsedMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  close();
  return summarize(rec.latencies, rec.errors, rec.statuses, elapsedMs, (used.user + used.system) / 1000, stalls.take());
}

/**
 * HTTP at a fixed rate, with node:http keep-alive connections: autocannon's own rate limit sends
 * each connection's quota for a second in a burst at the start of that second, which measures
 * bursts, not a steady load.
 */
async function runPacedHttp(spec: LoadSpec, target: HttpLoad): Promise<LoadResult> {
  const agent = new HttpAgent({ keepAlive: true, maxSockets: spec.connections });
  const headers = { ...target.headers, ...(target.body !== undefined ? { "content-type": "application/json" } : {}) };
  const rec = new Recorder();
  let next = 0;
  const call = () =>
    new Promise<void>((resolve) => {
      const path = target.paths[next++ % target.paths.length]!;
      const started = performance.now();
      const req = httpRequest(target.url + path, { method: target.method, headers, agent, timeout: 10_000 }, (res) => {
        res.resume();
        res.once("end", () => {
          const status = res.statusCode ?? 0;
          rec.record(status >= 200 && status < 300, String(status), performance.now() - started);
          resolve();
        });
      });
      req.once("timeout", () => req.destroy(new Error("timeout")));
      req.once("error", () => {
        rec.record(false, "connection error or timeout", performance.now() - started);
        resolve();
      });
      req.end(target.body);
    });
  return measure(spec, rec, call, () => agent.destroy());
}

async function runHttp(spec: LoadSpec, target: HttpLoad): Promise<LoadResult> {
  if (spec.rate !== undefined) return runPacedHttp(spec, target);
  const rec = new Recorder();
  if (spec.warmupSeconds > 0) await runAutocannon(target, spec.connections, spec.warmupSeconds, rec);
  rec.recording = true;
  announceStart();
  const stalls = startStallMonitor();
  const cpu = process.cpuUsage();
  const started = performance.now();
  const { errors } = await runAutocannon(target, spec.connections, spec.durationSeconds, rec);
  const elapsedMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  // Connection errors and timeouts never produce a response; count them as errors too.
  rec.errors += errors;
  if (errors > 0) rec.statuses["connection error or timeout"] = errors;
  return summarize(rec.latencies, rec.errors, rec.statuses, elapsedMs, (used.user + used.system) / 1000, stalls.take());
}

async function runGrpc(spec: LoadSpec, target: GrpcLoad): Promise<LoadResult> {
  const service = SERVICES[target.service];
  const method = service?.methods.find((m) => m.name === target.method);
  if (!service || !method) throw new Error(`unknown RPC ${target.service}/${target.method}`);
  const path = `/${service.typeName}/${method.name}`;
  const encoded = target.requests.map((json) => Buffer.from(toBinary(method.input, fromJson(method.input, json))));
  // Each channel gets its own subchannel pool, hence its own HTTP/2 connection.
  const clients = Array.from(
    { length: Math.max(1, target.channels) },
    () => new grpc.Client(target.address, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 }),
  );
  const metadata = new grpc.Metadata();
  for (const [k, v] of Object.entries(target.metadata)) metadata.set(k, v);
  const identity = (b: Buffer) => b;
  let next = 0;

  const rec = new Recorder();
  const call = (client: grpc.Client): Promise<void> =>
    new Promise((resolve) => {
      const request = encoded[next++ % encoded.length]!;
      const started = performance.now();
      client.makeUnaryRequest(path, identity, identity, request, metadata, { deadline: Date.now() + 10_000 }, (err) => {
        rec.record(!err, err ? (grpc.status[err.code] ?? String(err.code)) : "OK", performance.now() - started);
        resolve();
      });
    });

  await Promise.all(
    clients.map(
      (c) =>
        new Promise<void>((resolve, reject) => c.waitForReady(Date.now() + 10_000, (e) => (e ? reject(e) : resolve()))),
    ),
  );
  return measure(
    spec,
    rec,
    (i) => call(clients[i % clients.length]!),
    () => {
      for (const c of clients) c.close();
    },
  );
}

/** `channels` cleartext HTTP/2 sessions to `url`, connected. */
function h2Sessions(url: string, channels: number): Promise<ClientHttp2Session[]> {
  return Promise.all(
    Array.from(
      { length: Math.max(1, channels) },
      () =>
        new Promise<ClientHttp2Session>((resolve, reject) => {
          const session = connectH2(url, { peerMaxConcurrentStreams: 1_000 });
          session.once("connect", () => resolve(session));
          session.once("error", reject);
        }),
    ),
  );
}

/** gRPC unary calls on raw HTTP/2 streams, pre-encoded frames: the same loop as runH2. */
async function runGrpcH2(spec: LoadSpec, target: GrpcH2Load): Promise<LoadResult> {
  const service = SERVICES[target.service];
  const method = service?.methods.find((m) => m.name === target.method);
  if (!service || !method) throw new Error(`unknown RPC ${target.service}/${target.method}`);
  const frames = target.requests.map((json) => {
    const message = toBinary(method.input, fromJson(method.input, json));
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    frame.set(message, 5);
    return frame;
  });
  const headers = {
    ...target.metadata,
    ":method": "POST",
    ":path": `/${service.typeName}/${method.name}`,
    "content-type": "application/grpc",
    te: "trailers",
  };
  const sessions = await h2Sessions(target.url, target.channels);
  const rec = new Recorder();
  let next = 0;
  const call = (session: ClientHttp2Session): Promise<void> =>
    new Promise((resolve) => {
      const frame = frames[next++ % frames.length]!;
      const started = performance.now();
      let status = 0;
      let grpcStatus: string | undefined;
      const stream = session.request(headers);
      stream.setTimeout(10_000, () => stream.close());
      stream.once("response", (h) => {
        status = Number(h[":status"]);
        // A trailers-only answer carries its status in the headers.
        if (h["grpc-status"] !== undefined) grpcStatus = String(h["grpc-status"]);
      });
      stream.once("trailers", (t) => {
        grpcStatus = String(t["grpc-status"]);
      });
      stream.on("data", () => {});
      stream.once("close", () => {
        const ok = status === 200 && grpcStatus === "0" && stream.rstCode === 0;
        rec.record(ok, ok ? "OK" : `HTTP ${status} grpc-status ${grpcStatus}`, performance.now() - started);
        resolve();
      });
      stream.once("error", () => {});
      stream.end(frame);
    });
  return measure(
    spec,
    rec,
    (i) => call(sessions[i % sessions.length]!),
    () => {
      for (const session of sessions) session.close();
    },
  );
}

/** HTTP/2 GETs: the same shape as the gRPC generator (streams over a few sessions), without gRPC. */
async function runH2(spec: LoadSpec, target: H2Load): Promise<LoadResult> {
  const sessions = await h2Sessions(target.url, target.channels);
  const rec = new Recorder();
  let next = 0;
  const call = (session: ClientHttp2Session): Promise<void> =>
    new Promise((resolve) => {
      const path = target.paths[next++ % target.paths.length]!;
      const started = performance.now();
      let status = 0;
      const stream = session.request({ ...target.headers, ":method": "GET", ":path": path }, { endStream: true });
      stream.setTimeout(10_000, () => stream.close());
      stream.once("response", (headers) => {
        status = Number(headers[":status"]);
      });
      stream.on("data", () => {});
      stream.once("close", () => {
        const ok = status >= 200 && status < 300 && stream.rstCode === 0;
        rec.record(ok, status ? String(status) : "stream error or timeout", performance.now() - started);
        resolve();
      });
      stream.once("error", () => {});
    });
  return measure(
    spec,
    rec,
    (i) => call(sessions[i % sessions.length]!),
    () => {
      for (const session of sessions) session.close();
    },
  );
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

async function main() {
  // The spec comes on stdin: thousands of session ids would overflow an argument.
  const spec = JSON.parse(await readStdin()) as LoadSpec;
  const t = spec.target;
  const result =
    t.kind === "http"
      ? await runHttp(spec, t)
      : t.kind === "h2"
        ? await runH2(spec, t)
        : t.kind === "grpc-h2"
          ? await runGrpcH2(spec, t)
          : await runGrpc(spec, t);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

// Imported for its types by the orchestrator; runs only as a script.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`load generator failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
