// grpc.health.v1.Health, answered from the real state of the dependencies (Postgres, Redis):
// Kubernetes probes and Envoy's health checks call Check with "" (the whole server) or a
// service's full name.
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { type Health, HealthCheckResponse_ServingStatus as Status } from "../../gen/grpc/health/v1/health_pb.js";

/** True when every dependency answers. Never throws. */
export type DependencyProbe = () => Promise<boolean>;

const CACHE_MS = 1000;
const WATCH_INTERVAL_MS = 2000;

/** Caches a probe for a moment so a burst of health checks costs one round trip. */
export function cachedProbe(probe: DependencyProbe, ttlMs = CACHE_MS): DependencyProbe {
  let last: { at: number; value: Promise<boolean> } | undefined;
  return () => {
    const now = Date.now();
    if (!last || now - last.at > ttlMs) last = { at: now, value: probe() };
    return last.value;
  };
}

/**
 * `draining` aborts when the server begins to stop: from then on every service is NOT_SERVING
 * (probes take the pod out of rotation), and each Watch sends that and ends, so an open watch
 * does not hold the drain until its forced end.
 */
export function createHealthService(
  probe: DependencyProbe,
  serviceNames: readonly string[],
  draining?: AbortSignal,
): ServiceImpl<typeof Health> {
  const known = new Set(["", ...serviceNames]);
  const statusOf = async (service: string): Promise<Status> => {
    if (!known.has(service)) return Status.SERVICE_UNKNOWN;
    if (draining?.aborted) return Status.NOT_SERVING;
    return (await probe()) ? Status.SERVING : Status.NOT_SERVING;
  };
  return {
    async check(req) {
      if (!known.has(req.service)) throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
      return { status: await statusOf(req.service) };
    },
    async *watch(req, ctx) {
      let previous: Status | undefined;
      while (!ctx.signal.aborted) {
        const status = await statusOf(req.service);
        if (status !== previous) {
          previous = status;
          yield { status };
        }
        // The server is stopping: the watcher has its last status (NOT_SERVING), and the stream ends.
        if (draining?.aborted) return;
        // An abort that came while the status was read or sent fires no listener added now.
        if (ctx.signal.aborted) break;
        await new Promise<void>((resolve) => {
          const wake = () => {
            clearTimeout(timer);
            // Each wait adds its listeners; remove them, or a long watch piles them up.
            ctx.signal.removeEventListener("abort", wake);
            draining?.removeEventListener("abort", wake);
            resolve();
          };
          const timer = setTimeout(wake, WATCH_INTERVAL_MS);
          ctx.signal.addEventListener("abort", wake, { once: true });
          draining?.addEventListener("abort", wake, { once: true });
        });
      }
      // A watch ends only when the call does: past its deadline that is DEADLINE_EXCEEDED (the
      // signal's reason), not a stream that finished OK, maybe without a single status.
      throw ctx.signal.reason;
    },
  };
}
