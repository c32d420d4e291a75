// Huge messages on the gRPC port (issue 17): a gRPC length prefix announcing 300 MB, a Connect
// body announcing 300 MB, and 64 MB actually sent, on a public and an internal method, with
// and without a credential. Each must be answered in time with a well-formed answer while the
// server's peak resident memory (the real binary, a child process) grows by less than
// HUGE_CASE_BOUND_MIB; and each must be refused as it should be: RESOURCE_EXHAUSTED past the
// 32 MiB message limit, UNAUTHENTICATED before the body is read when a public call has no
// credential (services/platform/grpc-listener.ts: readMaxBytes on both listeners, and
// early-auth.ts: the credential check before the body is read).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { SessionService } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { TelemetryService } from "../../gen/agentplane/analytics/v1/analytics_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { recordFigures } from "./support/figures.js";
import { memoryOf, resetPeak } from "./support/process-memory.js";
import { envelope, H2Client, type H2Request, type H2Response } from "./support/raw-h2.js";
import { rpcUrlFor } from "./support/rpc-catalog.js";
import { answerLabel, readAnswer, type Answer } from "./support/rpc-invariants.js";
import { leakIn } from "./support/invariants.js";
import { startRpcTarget, type RpcTarget } from "./support/rpc-setup.js";
import { startServeProcess } from "./support/serve-process.js";
import type { DescMethod } from "@bufbuild/protobuf";

const MiB = 1024 * 1024;
/** How much one huge request may raise the server's peak resident memory: less than the 32 MiB message limit itself. */
const HUGE_CASE_BOUND_MIB = 32;
/** Longest wait for the answer to a huge request (64 MB take a moment to send). */
const HUGE_CALL_TIMEOUT_MS = 60_000;

const CHUNK = Buffer.alloc(MiB, "a");
/** `n` MiB of "a", as chunks of one shared buffer (the test holds 1 MiB, whatever it sends). */
const mebibytes = (n: number) => Array.from({ length: n }, () => CHUNK);

/** Protobuf bytes of a string field (wire type 2) whose value is `valueBytes` long, without the value. */
function stringFieldHead(fieldNo: number, valueBytes: number): Buffer {
  const out = [(fieldNo << 3) | 2];
  let n = valueBytes;
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
}

interface HugeCase {
  name: string;
  method: DescMethod;
  request(target: RpcTarget): H2Request;
  /** The code it is refused with. */
  refusal: Code;
  /** A reset is an acceptable answer (the request lied about its Content-Length). */
  resetAllowed?: boolean;
  /** Longest wait for the answer; past it the call hangs. */
  timeoutMs?: number;
}

const post = SessionService.method.postMessage;
const ingest = TelemetryService.method.ingest;
const grpcHeaders = (key?: string) => ({
  "content-type": "application/grpc",
  te: "trailers",
  ...(key ? { authorization: `Bearer ${key}` } : {}),
});
const connectHeaders = (key?: string) => ({
  "content-type": "application/json",
  "connect-protocol-version": "1",
  ...(key ? { authorization: `Bearer ${key}` } : {}),
});
const pathOf = (m: DescMethod) => `/${m.parent.typeName}/${m.name}`;

/** A PostMessage whose text is `size` MiB, as gRPC frames. */
function hugePost(target: RpcTarget, size: number): Buffer[] {
  const session = Buffer.concat([
    stringFieldHead(1, target.world.org.sessions.owner.length),
    Buffer.from(target.world.org.sessions.owner),
  ]);
  const head = Buffer.concat([session, stringFieldHead(2, size * MiB)]);
  return [envelope(0, head, head.length + size * MiB), ...mebibytes(size)];
}

/** The same PostMessage as Connect JSON. */
function hugePostJson(target: RpcTarget, size: number): { body: Buffer[]; length: number } {
  const head = Buffer.from(`{"sessionId":"${target.world.org.sessions.owner}","text":"`);
  const tail = Buffer.from(`"}`);
  return { body: [head, ...mebibytes(size), tail], length: head.length + size * MiB + tail.length };
}

const CASES: HugeCase[] = [
  {
    name: "gRPC, a length prefix announcing 300 MB, then 1 MB and the end of the stream",
    method: post,
    request: (t) => ({
      path: pathOf(post),
      headers: grpcHeaders(t.world.org.members.owner.key),
      body: [envelope(0, Buffer.alloc(0), 300_000_000), ...mebibytes(1)],
    }),
    refusal: Code.ResourceExhausted,
  },
  {
    name: "gRPC, a length prefix announcing 300 MB, then 64 MB of data",
    method: ingest,
    request: (t) => ({
      path: pathOf(ingest),
      headers: grpcHeaders(t.world.workloadTokens[TelemetryService.typeName]),
      body: [envelope(0, Buffer.alloc(0), 300_000_000), ...mebibytes(64)],
    }),
    refusal: Code.ResourceExhausted,
  },
  {
    name: "gRPC, a 64 MB message to a public method",
    method: post,
    request: (t) => ({
      path: pathOf(post),
      headers: grpcHeaders(t.world.org.members.owner.key),
      body: hugePost(t, 64),
    }),
    refusal: Code.ResourceExhausted,
  },
  {
    name: "gRPC, a 64 MB message to a public method without a credential",
    method: post,
    request: (t) => ({ path: pathOf(post), headers: grpcHeaders(), body: hugePost(t, 64) }),
    refusal: Code.Unauthenticated,
  },
  {
    name: "Connect, a Content-Length of 300 MB, then 1 MB and the end of the body",
    method: post,
    request: (t) => ({
      path: pathOf(post),
      headers: { ...connectHeaders(t.world.org.members.owner.key), "content-length": "300000000" },
      body: mebibytes(1),
    }),
    refusal: Code.ResourceExhausted,
    resetAllowed: true,
  },
  {
    name: "Connect, a 64 MB JSON body to a public method",
    method: post,
    request: (t) => {
      const { body, length } = hugePostJson(t, 64);
      return {
        path: pathOf(post),
        headers: { ...connectHeaders(t.world.org.members.owner.key), "content-length": String(length) },
        body,
      };
    },
    refusal: Code.ResourceExhausted,
  },
  {
    name: "Connect, a 64 MB JSON body to a public method without a credential",
    method: post,
    request: (t) => {
      const { body, length } = hugePostJson(t, 64);
      return { path: pathOf(post), headers: { ...connectHeaders(), "content-length": String(length) }, body };
    },
    refusal: Code.Unauthenticated,
  },
  {
    name: "Connect, a 64 MB JSON body to an internal method",
    method: ingest,
    request: (t) => {
      const head = Buffer.from(`{"events":[{"type":"`);
      const tail = Buffer.from(`"}]}`);
      return {
        path: pathOf(ingest),
        headers: {
          ...connectHeaders(t.world.workloadTokens[TelemetryService.typeName]),
          "content-length": String(head.length + 64 * MiB + tail.length),
        },
        body: [head, ...mebibytes(64), tail],
      };
    },
    refusal: Code.ResourceExhausted,
  },
  // Under the 32 MiB limit, so only the credential check before the body is read answers these:
  // the body never ends.
  {
    name: "gRPC, 20 MB announced without a credential, 1 MB sent and the stream kept open",
    method: post,
    request: () => ({
      path: pathOf(post),
      headers: grpcHeaders(),
      body: [envelope(0, Buffer.alloc(0), 20 * MiB), ...mebibytes(1)],
      keepOpen: true,
    }),
    timeoutMs: 5_000,
    refusal: Code.Unauthenticated,
  },
  {
    name: "Connect, a Content-Length of 20 MB without a credential, 1 MB sent and the body kept open",
    method: post,
    request: () => ({
      path: pathOf(post),
      headers: { ...connectHeaders(), "content-length": String(20 * MiB) },
      body: mebibytes(1),
      keepOpen: true,
    }),
    timeoutMs: 5_000,
    refusal: Code.Unauthenticated,
  },
];

interface Outcome {
  error?: Error;
  answer?: Answer;
  problems: string[];
  peakGrowthMiB: number;
  ms: number;
  /** Afterwards the process is up and its health check answers OK. */
  healthy: boolean;
}

async function healthCheck(url: string): Promise<H2Response> {
  const client = new H2Client(url);
  try {
    return await client.request(
      { path: `/${Health.typeName}/Check`, headers: grpcHeaders(), body: [envelope(0, Buffer.alloc(0))] },
      10_000,
    );
  } finally {
    client.close();
  }
}

describe("huge messages on the gRPC port", () => {
  let target: RpcTarget;
  const outcomes = new Map<string, Promise<Outcome>>();

  beforeAll(async () => {
    target = await startRpcTarget({ WORKERS: "false" });
  }, 180_000);
  afterAll(() => target?.close());

  /**
   * Sends the case once, to a server process of its own on the seeded database, so that what an
   * earlier case left on the heap does not blur the measurement; both tests of a case read the
   * same outcome.
   */
  function outcomeOf(c: HugeCase): Promise<Outcome> {
    let known = outcomes.get(c.name);
    if (!known) {
      known = (async () => {
        const server = await startServeProcess({
          DATABASE_URL: target.database.url,
          REDIS_URL: process.env.TEST_REDIS_URL ?? "",
          WORKERS: "false",
        });
        const endpoints = { grpcUrl: server.grpcUrl, internalGrpcUrl: server.internalGrpcUrl };
        const pid = server.child.pid!;
        const client = new H2Client(rpcUrlFor(endpoints, c.method.parent));
        const problems: string[] = [];
        try {
          // Warm: the first call loads what every call needs.
          expect((await healthCheck(endpoints.grpcUrl)).trailers["grpc-status"]).toBe("0");
          const before = memoryOf(pid);
          resetPeak(pid);
          const started = performance.now();
          const growth = () => memoryOf(pid).peakMiB - before.rssMiB;
          let outcome: Outcome;
          try {
            const res = await client.request(c.request(target), c.timeoutMs ?? HUGE_CALL_TIMEOUT_MS);
            const answer = readAnswer(res, c.method, problems);
            const leak = leakIn(res.body.toString("utf8")) ?? leakIn(String(res.trailers["grpc-message"] ?? ""));
            if (leak) problems.push(`the answer leaks internals: ${leak}`);
            outcome = {
              answer,
              problems,
              peakGrowthMiB: growth(),
              ms: Math.round(performance.now() - started),
              healthy: false,
            };
          } catch (e) {
            outcome = {
              error: e as Error,
              problems,
              peakGrowthMiB: growth(),
              ms: Math.round(performance.now() - started),
              healthy: false,
            };
          }
          outcome.healthy =
            server.child.exitCode === null && (await healthCheck(endpoints.grpcUrl)).trailers["grpc-status"] === "0";
          recordFigures(`rpc huge ${c.name}`, {
            answer: outcome.answer ? answerLabel(outcome.answer) : outcome.error?.message,
            peakGrowthMiB: outcome.peakGrowthMiB,
            ms: outcome.ms,
          });
          return outcome;
        } finally {
          client.close();
          await server.terminate();
        }
      })();
      outcomes.set(c.name, known);
    }
    return known;
  }

  for (const c of CASES) {
    it(`${c.name}: answered in time, well formed, the server's peak memory under +${HUGE_CASE_BOUND_MIB} MiB`, async () => {
      const o = await outcomeOf(c);
      expect(o.error?.message).toBeUndefined();
      expect(o.problems).toEqual([]);
      const answered =
        (o.answer!.kind === "rpc" && o.answer!.code !== 0) || (c.resetAllowed === true && o.answer!.kind === "reset");
      expect(answered, `answer ${answerLabel(o.answer!)}`).toBe(true);
      if (o.answer!.kind === "rpc") expect([Code.Internal, Code.Unknown]).not.toContain(o.answer!.code);
      expect(o.peakGrowthMiB, "growth of the server's peak RSS (MiB)").toBeLessThan(HUGE_CASE_BOUND_MIB);
      expect(o.healthy, "the server still up and answering its health check").toBe(true);
    }, 120_000);

    it(`${c.name}: refused with ${answerLabel({ kind: "rpc", code: c.refusal, message: "" })}`, async () => {
      const o = await outcomeOf(c);
      expect(o.answer).toMatchObject({ kind: "rpc", code: c.refusal });
    }, 120_000);
  }
});
