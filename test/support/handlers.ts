import {
  ConnectError,
  createRouterTransport,
  type ConnectRouter,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import {
  kPrincipal,
  kWorkload,
  type Principal,
  type Role,
  type WorkloadPrincipal,
} from "../../services/platform/context.js";
import { requestContextInterceptor } from "../../services/platform/request-context.js";
import { testLogger } from "./database.js";

export interface CallerInit {
  orgId: string;
  userId?: string;
  role?: Role;
  credentialId?: string;
}

export interface WorkloadInit {
  /** The organization the account is bound to; absent: unbound (any organization). */
  orgId?: string;
  scopes: string[];
}

/**
 * The routes, called as `caller` (a user) or as a workload — without either, as an unbound
 * service account, which is what internal services see from a platform component.
 */
export function handlerTransport(
  routes: (router: ConnectRouter) => void,
  caller?: CallerInit,
  workload?: WorkloadInit,
): Transport {
  const interceptors: Interceptor[] = [requestContextInterceptor(testLogger())];
  if (!caller) {
    const principal: WorkloadPrincipal = {
      accountId: "test-account",
      name: "test",
      orgId: workload?.orgId,
      scopes: workload?.scopes ?? [],
      credentialId: "account:test-account",
    };
    interceptors.push((next) => (req) => {
      req.contextValues.set(kWorkload, principal);
      return next(req);
    });
  } else {
    const principal: Principal = {
      orgId: caller.orgId,
      userId: caller.userId ?? "u",
      role: caller.role ?? "member",
      credentialKind: "api_key",
      credentialId: caller.credentialId ?? `key:${caller.userId ?? caller.role ?? "member"}`,
      rateLimitPerMinute: 10_000,
    };
    interceptors.push((next) => (req) => {
      req.contextValues.set(kPrincipal, principal);
      return next(req);
    });
  }
  return createRouterTransport(routes, { router: { interceptors } });
}

/** The ConnectError a call fails with; fails the test when the call succeeds. */
export async function rejection(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("expected the call to fail");
}
