// Bad input on the gRPC port (issue 17), as fuzz-{analytics,sessions,v0} do it for the REST
// edge: FUZZ_RUNS generated requests per method (default 1 000) for every method of every
// service the port serves, public, internal and grpc.health.v1.Health, mixing Connect JSON and
// gRPC binary (support/rpc-cases.ts says what is generated). Every answer must be well formed,
// never INTERNAL or UNKNOWN, within CALL_TIMEOUT_MS, without a stack frame or a source path;
// the server (the real binary, a child process) must stay up and healthy, and its memory within
// a stated bound. fuzz-rpc-memory.test.ts sends the huge messages.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { DescFile } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordFigures } from "./support/figures.js";
import { FUZZ_RUNS } from "./support/fuzz-runner.js";
import { waitForListeners } from "./support/event-listeners.js";
import { memoryOf, resetPeak, type Memory } from "./support/process-memory.js";
import { envelope, H2Client } from "./support/raw-h2.js";
import { REFLECTION_SERVICES } from "../../services/platform/reflection.js";
import { WebService } from "../../gen/agentplane/web/v1/web_pb.js";
import type { DescService } from "@bufbuild/protobuf";
import { RPC_METHODS, rpcId, rpcUrlFor } from "./support/rpc-catalog.js";
import { binaryBody, MessageGenerator } from "./support/rpc-messages.js";
import { fuzzMethod, type RpcFigures } from "./support/rpc-runner.js";
import { startRpcTarget, type RpcTarget } from "./support/rpc-setup.js";
import { coherentFor, validPools } from "./support/rpc-values.js";
import { Health, HealthCheckRequestSchema } from "../../gen/grpc/health/v1/health_pb.js";
import {
  GetSessionRequestSchema,
  SessionService,
  WatchSessionEventsRequestSchema,
} from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";

/** Peak resident memory of the server over the whole run, whatever the cases did. */
const RUN_PEAK_BOUND_MIB = 512;

/** Every service of every generated file (gen/), served or not. */
async function everyGeneratedService() {
  const root = join(import.meta.dirname, "../../gen");
  const files = readdirSync(root, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith("_pb.ts"));
  const services = [];
  for (const f of files) {
    const module = (await import(pathToFileURL(join(root, f)).href)) as Record<string, unknown>;
    for (const v of Object.values(module))
      if ((v as DescFile)?.kind === "file") services.push(...(v as DescFile).services);
  }
  return services;
}

async function healthCheck(url: string): Promise<{ status: number; grpcStatus: string | undefined; body: Buffer }> {
  const client = new H2Client(url);
  try {
    const res = await client.request(
      {
        path: `/${Health.typeName}/Check`,
        headers: { "content-type": "application/grpc", te: "trailers" },
        body: [envelope(0, Buffer.alloc(0))],
      },
      10_000,
    );
    return {
      status: res.status,
      grpcStatus: String(res.trailers["grpc-status"] ?? res.headers["grpc-status"]),
      body: res.body,
    };
  } finally {
    client.close();
  }
}

describe("fuzzing the gRPC port", () => {
  let target: RpcTarget;
  let generator: MessageGenerator;
  let before: Memory;
  const figures: RpcFigures[] = [];
  const started = Date.now();

  beforeAll(async () => {
    target = await startRpcTarget();
    generator = new MessageGenerator(validPools(target.world));
    before = memoryOf(target.server.child.pid!);
    resetPeak(target.server.child.pid!);
  }, 180_000);
  afterAll(async () => {
    // The server must stop: within the listeners' drain (20 s) and the forced close after it. The
    // forced close once hung here for ever (a write to a peer that stopped reading kept the
    // session open; grpc-listener-stop.test.ts); the time it took is printed.
    const started = performance.now();
    await target?.close();
    console.log(`[reliability] rpc fuzz: server stopped in ${Math.round((performance.now() - started) / 100) / 10} s`);
  }, 60_000);

  it("the fuzzed methods are exactly those the server answers: every method of every generated service, probed", async () => {
    // Each listening URL is asked for every method of every generated service: an unknown path
    // is a 404 from the router, a served one answers in gRPC whatever the call's credential.
    const urls = [target.grpcUrl, ...(target.internalGrpcUrl ? [target.internalGrpcUrl] : [])];
    const servedAt = new Map<string, string[]>();
    const services = await everyGeneratedService();
    for (const url of urls) {
      const client = new H2Client(url);
      try {
        for (const service of services) {
          for (const method of service.methods) {
            const res = await client.request(
              {
                path: `/${service.typeName}/${method.name}`,
                headers: { "content-type": "application/grpc", te: "trailers" },
                body: [envelope(0, Buffer.alloc(0))],
                until: (b) => b.length > 0,
              },
              10_000,
            );
            if (res.status !== 404)
              servedAt.set(`${service.typeName}/${method.name}`, [
                ...(servedAt.get(`${service.typeName}/${method.name}`) ?? []),
                url,
              ]);
          }
        }
      } finally {
        client.close();
      }
    }
    // Server reflection is served on both ports and not fuzzed here: its bidirectional stream is
    // no call this fuzzer makes (test/grpc-reflection.test.ts covers it).
    const methodIds = (services: readonly DescService[]) =>
      services.flatMap((s) => s.methods.map((m) => `${s.typeName}/${m.name}`));
    const notFuzzed = methodIds(REFLECTION_SERVICES);
    for (const id of notFuzzed) expect(servedAt.get(id), id).toEqual(urls);
    // Nor the web module's pages (rpc-catalog.ts says why): served on the public port alone.
    const pages = methodIds([WebService]);
    for (const id of pages) expect(servedAt.get(id), id).toEqual([target.grpcUrl]);
    expect([...servedAt.keys()].sort()).toEqual([...RPC_METHODS.map(rpcId), ...notFuzzed, ...pages].sort());
    expect(servedAt.size - notFuzzed.length - pages.length).toBe(60); // catalog.test.ts says which
    // Each is fuzzed where it is served; once internal services have a port of their own, the
    // public port does not serve them.
    for (const m of RPC_METHODS) {
      expect(servedAt.get(rpcId(m)), rpcId(m)).toContain(rpcUrlFor(target, m.service));
      if (target.internalGrpcUrl && m.access === "internal")
        expect(servedAt.get(rpcId(m)), rpcId(m)).not.toContain(target.grpcUrl);
    }
  }, 60_000);

  describe.concurrent(`${FUZZ_RUNS} generated requests per method`, () => {
    for (const m of RPC_METHODS) {
      it(`${rpcId(m)}: every answer well formed, never INTERNAL or UNKNOWN, in time`, async () => {
        const coherent = coherentFor(target.world, m.method.input);
        const f = await fuzzMethod(target, m, { world: target.world, generator, ...(coherent ? { coherent } : {}) });
        figures.push(f);
        expect(f.cases).toBe(FUZZ_RUNS);
        // Both protocols, and both sides: some calls succeed, some are refused (when the run
        // is large enough to be sure of it).
        if (FUZZ_RUNS >= 200) {
          expect(Object.keys(f.byProtocol).sort()).toEqual(["connect", "grpc"]);
          expect(f.byCode.OK ?? 0, "answers that succeeded").toBeGreaterThan(0);
          expect(f.cases - (f.byCode.OK ?? 0), "answers that refused").toBeGreaterThan(0);
        }
      }, 900_000);
    }
  });

  it(`afterwards the server is up and healthy, and its memory stayed under ${RUN_PEAK_BOUND_MIB} MiB`, async () => {
    const pid = target.server.child.pid!;
    expect(target.server.child.exitCode, target.server.output().slice(-2000)).toBeNull();
    const health = await healthCheck(target.grpcUrl);
    expect(health.status).toBe(200);
    expect(health.grpcStatus).toBe("0");
    expect(health.body.subarray(5)).toEqual(Buffer.from([0x08, 0x01])); // SERVING
    const after = memoryOf(pid);
    const total = figures.reduce((n, f) => n + f.cases, 0);
    const byCode: Record<string, number> = {};
    for (const f of figures) for (const [k, v] of Object.entries(f.byCode)) byCode[k] = (byCode[k] ?? 0) + v;
    const slowestMs = Math.max(...figures.map((f) => f.slowestMs));
    recordFigures("rpc fuzz run", {
      methods: figures.length,
      cases: total,
      byCode,
      slowestMs,
      rssBeforeMiB: before.rssMiB,
      peakMiB: after.peakMiB,
      rssAfterMiB: after.rssMiB,
      seconds: Math.round((Date.now() - started) / 1000),
    });
    expect(after.peakMiB, "peak RSS of the server during the run (MiB)").toBeLessThan(RUN_PEAK_BOUND_MIB);
  }, 60_000);

  // The session event streams the fuzz opened (thousands, each cancelled after its first message
  // or ended at its deadline) are all gone from the server: it holds its LISTEN connection only
  // while one is open (test/reliability/support/event-listeners.ts). One stream left open shows
  // that the check sees one.
  it("afterwards no session event stream is left open on the server", async () => {
    const db = target.database.db;
    expect(await waitForListeners(db, (n) => n === 0), "event streams left open after the fuzz").toBe(0);
    const client = new H2Client(rpcUrlFor(target, SessionService));
    try {
      const open = client
        .request(
          {
            path: `/${SessionService.typeName}/WatchSessionEvents`,
            headers: {
              "content-type": "application/grpc",
              te: "trailers",
              authorization: `Bearer ${target.world.org.members.owner.key}`,
            },
            body: [
              envelope(
                0,
                binaryBody(
                  WatchSessionEventsRequestSchema,
                  { sessionId: target.world.org.sessions.owner },
                  { kind: "none" },
                ),
              ),
            ],
          },
          30_000,
        )
        .catch(() => undefined);
      expect(await waitForListeners(db, (n) => n > 0), "the LISTEN connection of one open stream").toBe(1);
      client.close();
      await open;
    } finally {
      client.close();
    }
    expect(await waitForListeners(db, (n) => n === 0), "the LISTEN connection after the client left").toBe(0);
  }, 60_000);

  // A binary message that does not decode is the client's bad input: INVALID_ARGUMENT
  // (connect-es itself answers INTERNAL: services/platform/decode-errors.ts maps it).
  describe("binary messages that do not decode", () => {
    const kinds = ["truncatedVarint", "invalidUtf8", "fieldZero", "lengthOverrun", "negativeLength"] as const;
    for (const kind of kinds) {
      it(`${kind}: INVALID_ARGUMENT`, async () => {
        const client = new H2Client(rpcUrlFor(target, SessionService));
        try {
          const payload = binaryBody(GetSessionRequestSchema, { sessionId: target.world.org.sessions.owner }, { kind });
          const res = await client.request(
            {
              path: `/${SessionService.typeName}/GetSession`,
              headers: {
                "content-type": "application/grpc",
                te: "trailers",
                authorization: `Bearer ${target.world.org.members.owner.key}`,
              },
              body: [envelope(0, Buffer.from(payload))],
            },
            10_000,
          );
          expect(res.trailers["grpc-status"]).toBe("3");
        } finally {
          client.close();
        }
      });
    }
    it("a compressed flag without grpc-encoding: INVALID_ARGUMENT", async () => {
      const client = new H2Client(target.grpcUrl);
      try {
        const payload = binaryBody(HealthCheckRequestSchema, {}, { kind: "none" });
        const res = await client.request(
          {
            path: `/${Health.typeName}/Check`,
            headers: { "content-type": "application/grpc", te: "trailers" },
            body: [envelope(1, Buffer.from(payload))],
          },
          10_000,
        );
        expect(res.trailers["grpc-status"]).toBe("3");
      } finally {
        client.close();
      }
    });
  });

  // A deadline past what setTimeout holds (2^31 - 1 ms, 24.8 days) is cut to 1 ms by Node (a
  // TimeoutOverflowWarning on the server's stderr): the call's deadline passes at once. Handlers
  // that do not watch their signal finish anyway; Health.Watch shows it: its stream ends with
  // DEADLINE_EXCEEDED instead of staying open. The listeners bound deadlines (maxTimeoutMs in
  // services/platform/grpc-listener.ts): a longer one is refused as the client's error.
  describe("deadlines past 24.8 days", () => {
    const cases = [
      {
        name: "gRPC, grpc-timeout 99999999S (3 years)",
        headers: { "content-type": "application/grpc", te: "trailers", "grpc-timeout": "99999999S" },
        body: Buffer.alloc(0),
      },
      {
        name: "Connect, connect-timeout-ms 9999999999 (115 days)",
        headers: { "content-type": "application/connect+json", "connect-timeout-ms": "9999999999" },
        body: Buffer.from("{}"),
      },
    ];
    for (const c of cases) {
      it(`${c.name}: a Health.Watch stream does not end DEADLINE_EXCEEDED`, async () => {
        const client = new H2Client(target.grpcUrl);
        try {
          const answer = await client
            .request({ path: `/${Health.typeName}/Watch`, headers: c.headers, body: [envelope(0, c.body)] }, 1_000)
            .then(
              (res) => `${res.status} ${JSON.stringify(res.trailers)} ${res.body.toString("utf8")}`,
              (e: Error) => (e.name === "HangError" ? "still open" : e.message),
            );
          expect(answer).not.toMatch(/"grpc-status":"4"|deadline_exceeded/);
        } finally {
          client.close();
        }
      });
    }
  });
});
