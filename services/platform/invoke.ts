// Calling a method's implementation through the server interceptors, without Connect's protocol
// handlers: what a Connect handler does per call once it has the request message (build the
// handler context, run the interceptor chain, first interceptor outermost, around the
// implementation), shared by the two places that skip the protocol machinery: the in-process
// edge's transport (services/edge/local-transport.ts) and the unary gRPC fast path
// (grpc-unary.ts). Connect's generic handler does the same through async iterables and abort
// signals per call, which was most of the gRPC server path's cost (BENCHMARKS.md, issue 19).
import type { DescMethod, DescService, MessageInitShape } from "@bufbuild/protobuf";

/** What Connect takes as headers (a Headers object, pairs or a record). */
type HeaderInit = ConstructorParameters<typeof Headers>[0];
import { create, type BinaryReadOptions, type BinaryWriteOptions, type DescMessage } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createHandlerContext,
  createMethodImplSpec,
  createServiceImplSpec,
  type ConnectRouter,
  type ContextValues,
  type Interceptor,
  type MethodImplSpec,
  type StreamRequest,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";

/** The reason a finished call's signal is aborted with (shared: building an error per call is costly). */
export const CALL_FINISHED = new ConnectError("the call has finished", Code.Canceled);

export type AnyFn = Parameters<Interceptor>[0];
export type CallContext = ReturnType<typeof createHandlerContext>;
type UnaryImplSpec = Extract<MethodImplSpec, { kind: "unary" }>;

/** Collects the implementations a module's routes() registers, instead of building HTTP handlers. */
export function collectImplementations(routes: (router: ConnectRouter) => void): Map<DescMethod, MethodImplSpec> {
  return collectRegistrations(routes).specs;
}

/** The binary (de)serialization options a registration gave its methods (a raised recursion limit, say). */
export type BinaryOptions = Partial<BinaryReadOptions & BinaryWriteOptions>;

/** What routes() registers: each method's implementation, and the binary options it was registered with. */
function collectRegistrations(routes: (router: ConnectRouter) => void) {
  const specs = new Map<DescMethod, MethodImplSpec>();
  const binaryOptions = new Map<DescMethod, BinaryOptions>();
  const readMaxBytes = new Map<DescMethod, number>();
  const router: ConnectRouter = {
    handlers: [],
    service(service, implementation, options) {
      // Absent methods get an implementation that throws UNIMPLEMENTED, as the router does.
      const spec = createServiceImplSpec(service, implementation);
      for (const method of Object.values(spec.methods)) {
        specs.set(method.method, method);
        if (options?.binaryOptions) binaryOptions.set(method.method, options.binaryOptions);
        if (options?.readMaxBytes !== undefined) readMaxBytes.set(method.method, options.readMaxBytes);
      }
      return router;
    },
    rpc(method, implementation, options) {
      specs.set(method, createMethodImplSpec(method, implementation));
      if (options?.binaryOptions) binaryOptions.set(method, options.binaryOptions);
      if (options?.readMaxBytes !== undefined) readMaxBytes.set(method, options.readMaxBytes);
      return router;
    },
  };
  routes(router);
  return { specs, binaryOptions, readMaxBytes };
}

/** What a call's context is built from: the request as the protocol delivered it. */
export interface CallInit {
  readonly protocolName: string;
  readonly url: string;
  readonly signal: AbortSignal | undefined;
  readonly timeoutMs: number | undefined;
  readonly header: HeaderInit | undefined;
  readonly contextValues: ContextValues | undefined;
  /** What the protocol starts the response's headers and trailers with (gRPC: content type, grpc-status 0). */
  readonly responseHeader?: HeaderInit;
  readonly responseTrailer?: HeaderInit;
}

export function createCallContext(method: DescMethod, init: CallInit): CallContext {
  return createHandlerContext({
    service: method.parent,
    method,
    protocolName: init.protocolName,
    requestMethod: "POST",
    url: init.url,
    timeoutMs: init.timeoutMs,
    requestSignal: init.signal,
    requestHeader: init.header,
    contextValues: init.contextValues,
    responseHeader: init.responseHeader,
    responseTrailer: init.responseTrailer,
  });
}

/** What every request of the call starts as; unary and streaming calls add their own. */
export function requestCommon(method: DescMethod, context: CallContext) {
  return {
    service: method.parent as DescService,
    method,
    requestMethod: "POST",
    url: context.url,
    signal: context.signal,
    header: context.requestHeader,
    contextValues: context.values,
  };
}

/** The handler's context as the interceptors left the request (they may replace headers, signal and values). */
export function handlerContext(context: CallContext, r: UnaryRequest | StreamRequest): CallContext {
  return { ...context, service: r.service, requestHeader: r.header, signal: r.signal, values: r.contextValues };
}

/**
 * Anything a call threw as the ConnectError a client receives: interceptors turn every failure
 * into one (anything else is a bug whose message must not reach a client), as Connect's handlers do.
 */
export function asConnectError(err: unknown): ConnectError {
  return err instanceof ConnectError
    ? err
    : new ConnectError("internal error", Code.Internal, undefined, undefined, err);
}

function copyMissing(from: Headers, into: Headers): void {
  from.forEach((value, name) => {
    if (!into.has(name)) into.set(name, value);
  });
}

/**
 * A failed call's error as a client of a transport receives it: with the response headers and
 * trailers the call had set in its metadata (over gRPC they arrive in the headers and trailers).
 */
export function callError(err: unknown, context: CallContext): ConnectError {
  const error = asConnectError(err);
  copyMissing(context.responseHeader, error.metadata);
  copyMissing(context.responseTrailer, error.metadata);
  return error;
}

export interface Invoker {
  /** The implementation registered for `method`, if any. */
  spec(method: DescMethod): MethodImplSpec | undefined;
  /** Every method with an implementation. */
  methods(): Iterable<DescMethod>;
  /** The binary options `method` was registered with, as Connect's handler would use them. */
  binaryOptions(method: DescMethod): BinaryOptions | undefined;
  /**
   * `method`'s request message limit on a listener that takes `listenerMax`: the smaller
   * readMaxBytes it was registered with, if any (as Connect's handler reads it), else the listener's.
   */
  maxRequestBytes(method: DescMethod, listenerMax: number): number;
  /** The interceptors around `innermost`, first interceptor outermost (what Connect's handler does per call). */
  intercepted(innermost: AnyFn): AnyFn;
  /**
   * Runs a unary call: the interceptors, then the implementation with `message`. Resolves with
   * the response (its header and trailer are the context's); rejects with whatever the chain
   * threw. The caller aborts the context when the call is over.
   */
  unary(spec: UnaryImplSpec, context: CallContext, message: MessageInitShape<DescMessage>): Promise<UnaryResponse>;
}

export function createInvoker(routes: (router: ConnectRouter) => void, interceptors: readonly Interceptor[]): Invoker {
  const { specs, binaryOptions, readMaxBytes } = collectRegistrations(routes);
  const outermostFirst = [...interceptors].reverse();
  const intercepted = (innermost: AnyFn): AnyFn => {
    let chain = innermost;
    for (const interceptor of outermostFirst) chain = interceptor(chain);
    return chain;
  };
  return {
    spec: (method) => specs.get(method),
    methods: () => specs.keys(),
    binaryOptions: (method) => binaryOptions.get(method),
    maxRequestBytes: (method, listenerMax) => Math.min(listenerMax, readMaxBytes.get(method) ?? listenerMax),
    intercepted,
    unary(spec, context, message) {
      const method = spec.method;
      const req: UnaryRequest = { ...requestCommon(method, context), stream: false, message } as UnaryRequest;
      const chain = intercepted(async (r) => {
        const output = await spec.impl((r as UnaryRequest).message, handlerContext(context, r));
        const response: UnaryResponse = {
          stream: false,
          service: method.parent,
          method,
          header: context.responseHeader,
          trailer: context.responseTrailer,
          message: create(method.output, output),
        };
        return response;
      });
      return chain(req) as Promise<UnaryResponse>;
    },
  };
}
