// The edge's transport when the services run in its own process: each call goes through the
// same server interceptors (request context, auth, rate limit) to the same implementation, but
// the request and response messages are handed over as objects.
//
// Why not createRouterTransport: it runs the whole Connect protocol in memory — the request is
// encoded to protobuf binary and framed, a server handler decodes it, the response is encoded
// and decoded again, with async-iterable plumbing and abort signals on both sides — for a hop
// that never leaves the process. That was a third of the service's CPU per edge request and
// most of it on large responses such as 90 days of analytics (BENCHMARKS.md).
//
// Behaviour matches the router transport as the edge sees it: an unimplemented method is
// UNIMPLEMENTED, response headers and trailers come back, and a failed call is a ConnectError
// whose metadata carries the response headers the call had set (as a client would receive
// them), so rate-limit headers and the request id reach error responses too.
import {
  create,
  type DescMessage,
  type DescMethod,
  type DescMethodUnary,
  type DescService,
  type MessageInitShape,
} from "@bufbuild/protobuf";
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
  type StreamResponse,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";

/** The reason a finished call's signal is aborted with (shared: building an error per call is costly). */
const CALL_FINISHED = new ConnectError("the call has finished", Code.Canceled);

type AnyFn = Parameters<Interceptor>[0];

/** Collects the implementations a module's routes() registers, instead of building HTTP handlers. */
function collectImplementations(routes: (router: ConnectRouter) => void): Map<DescMethod, MethodImplSpec> {
  const specs = new Map<DescMethod, MethodImplSpec>();
  const router: ConnectRouter = {
    handlers: [],
    service(service, implementation) {
      // Absent methods get an implementation that throws UNIMPLEMENTED, as the router does.
      const spec = createServiceImplSpec(service, implementation);
      for (const method of Object.values(spec.methods)) specs.set(method.method, method);
      return router;
    },
    rpc(method, implementation) {
      specs.set(method, createMethodImplSpec(method, implementation));
      return router;
    },
  };
  routes(router);
  return specs;
}

function copyMissing(from: Headers, into: Headers): void {
  from.forEach((value, name) => {
    if (!into.has(name)) into.set(name, value);
  });
}

export function createLocalTransport(
  routes: (router: ConnectRouter) => void,
  interceptors: readonly Interceptor[],
): Transport {
  const specs = collectImplementations(routes);
  const outermostFirst = [...interceptors].reverse();

  return {
    async unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: Parameters<Transport["unary"]>[3],
      input: MessageInitShape<I>,
      contextValues?: ContextValues,
    ): Promise<UnaryResponse<I, O>> {
      const spec = specs.get(method);
      if (spec?.kind !== "unary")
        throw new ConnectError(`${method.parent.typeName}.${method.name} is not implemented`, Code.Unimplemented);
      const service: DescService = method.parent;
      const url = `local:///${service.typeName}/${method.name}`;
      const context = createHandlerContext({
        service,
        method,
        protocolName: "local",
        requestMethod: "POST",
        url,
        timeoutMs,
        requestSignal: signal,
        requestHeader: header,
        contextValues,
      });
      const req: UnaryRequest = {
        stream: false,
        service,
        method,
        requestMethod: "POST",
        url,
        signal: context.signal,
        header: context.requestHeader,
        contextValues: context.values,
        message: create(method.input as DescMessage, input as MessageInitShape<DescMessage>),
      };
      // What Connect's handler does per call: the interceptors wrap the implementation, first
      // interceptor outermost; they may replace the request's headers, signal and values.
      let chain: AnyFn = async (r) => {
        const { message } = r as UnaryRequest;
        const output = await spec.impl(message, {
          ...context,
          service: r.service,
          requestHeader: r.header,
          signal: r.signal,
          values: r.contextValues,
        });
        const response: UnaryResponse = {
          stream: false,
          service,
          method: spec.method,
          header: context.responseHeader,
          trailer: context.responseTrailer,
          message: create(spec.method.output, output),
        };
        return response;
      };
      for (const interceptor of outermostFirst) chain = interceptor(chain);
      try {
        const res = await chain(req);
        return res as unknown as UnaryResponse<I, O>;
      } catch (err) {
        // Interceptors turn every failure into a ConnectError; anything else is a bug whose
        // message must not reach a client.
        const error =
          err instanceof ConnectError
            ? err
            : new ConnectError("internal error", Code.Internal, undefined, undefined, err);
        copyMissing(context.responseHeader, error.metadata);
        copyMissing(context.responseTrailer, error.metadata);
        throw error;
      } finally {
        context.abort(CALL_FINISHED);
      }
    },

    stream<I extends DescMessage, O extends DescMessage>(
      method: Parameters<Transport["stream"]>[0],
    ): Promise<StreamResponse<I, O>> {
      return Promise.reject(
        new ConnectError(
          `${method.parent.typeName}.${method.name}: streaming calls are not supported in process`,
          Code.Unimplemented,
        ),
      );
    },
  };
}
