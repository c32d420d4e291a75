// The edge's transport when the services run in its own process: each call goes through the
// same server interceptors (request context, auth, rate limit) to the same implementation, but
// the request and response messages are handed over as objects. The call itself is
// platform/invoke.ts, shared with the gRPC listeners' unary fast path.
//
// Why not createRouterTransport: it runs the whole Connect protocol in memory — the request is
// encoded to protobuf binary and framed, a server handler decodes it, the response is encoded
// and decoded again, with async-iterable plumbing and abort signals on both sides — for a hop
// that never leaves the process. That was a third of the service's CPU per edge request and
// most of it on large responses such as 90 days of analytics (BENCHMARKS.md).
//
// Behaviour matches the router transport as the edge sees it, for unary calls and server streams
// (the google.api.HttpBody routes): an unimplemented method is UNIMPLEMENTED, response headers and trailers come back, and a failed call is a ConnectError
// whose metadata carries the response headers the call had set (as a client would receive
// them), so rate-limit headers and the request id reach error responses too.
import {
  create,
  type DescMessage,
  type DescMethodStreaming,
  type DescMethodUnary,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  type Interceptor,
  type StreamRequest,
  type StreamResponse,
  type Transport,
  type UnaryResponse,
} from "@connectrpc/connect";
import {
  CALL_FINISHED,
  callError,
  createCallContext,
  createInvoker,
  handlerContext,
  requestCommon,
} from "../platform/invoke.js";

/** The one request message of a unary or server-streaming call. */
async function onlyMessage<T>(messages: AsyncIterable<T>): Promise<T> {
  let only: T | undefined;
  let count = 0;
  for await (const m of messages) {
    only = m;
    count++;
  }
  if (count !== 1) throw new ConnectError(`expected one request message, got ${count}`, Code.InvalidArgument);
  return only as T;
}

/** A stream of one message: the request of a server-streaming call. */
export async function* oneMessage<T>(message: T): AsyncIterable<T> {
  yield message;
}

export function createLocalTransport(
  routes: (router: ConnectRouter) => void,
  interceptors: readonly Interceptor[],
): Transport {
  const invoker = createInvoker(routes, interceptors);

  const callContext = (
    method: DescMethodUnary | DescMethodStreaming,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    header: Parameters<Transport["unary"]>[3],
    contextValues: ContextValues | undefined,
  ) => {
    const url = `local:///${method.parent.typeName}/${method.name}`;
    return createCallContext(method, { protocolName: "local", url, signal, timeoutMs, header, contextValues });
  };

  return {
    async unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: Parameters<Transport["unary"]>[3],
      input: MessageInitShape<I>,
      contextValues?: ContextValues,
    ): Promise<UnaryResponse<I, O>> {
      const spec = invoker.spec(method);
      if (spec?.kind !== "unary")
        throw new ConnectError(`${method.parent.typeName}.${method.name} is not implemented`, Code.Unimplemented);
      const context = callContext(method, signal, timeoutMs, header, contextValues);
      const message = create(method.input as DescMessage, input as MessageInitShape<DescMessage>);
      try {
        return (await invoker.unary(spec, context, message)) as unknown as UnaryResponse<I, O>;
      } catch (err) {
        throw callError(err, context);
      } finally {
        context.abort(CALL_FINISHED);
      }
    },

    /**
     * Server-streaming calls (the HttpBody routes of the REST edge). The response's messages are
     * produced as they are read, as over the network: the handler runs while the edge reads, and
     * an error it throws surfaces from the iteration, as a ConnectError with the call's metadata.
     */
    async stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: Parameters<Transport["stream"]>[3],
      input: AsyncIterable<MessageInitShape<I>>,
      contextValues?: ContextValues,
    ): Promise<StreamResponse<I, O>> {
      const spec = invoker.spec(method);
      if (spec?.kind !== "server_streaming") {
        const what = spec === undefined ? "is not implemented" : "is not a server-streaming method";
        throw new ConnectError(`${method.parent.typeName}.${method.name} ${what} in process`, Code.Unimplemented);
      }
      const service = method.parent;
      const context = callContext(method, signal, timeoutMs, header, contextValues);
      const req: StreamRequest = {
        ...requestCommon(method, context),
        stream: true,
        method,
        message: oneMessage(
          create(method.input as DescMessage, (await onlyMessage(input)) as MessageInitShape<DescMessage>),
        ),
      };
      const chain = invoker.intercepted(async (r) => {
        const request = await onlyMessage((r as StreamRequest).message);
        const outputs = spec.impl(request, handlerContext(context, r));
        const response: StreamResponse = {
          stream: true,
          service,
          method: spec.method,
          header: context.responseHeader,
          trailer: context.responseTrailer,
          message: created(spec.method.output, outputs),
        };
        return response;
      });
      let res: StreamResponse;
      try {
        res = (await chain(req)) as StreamResponse;
      } catch (err) {
        context.abort(CALL_FINISHED);
        throw callError(err, context);
      }
      const messages = res.message;
      async function* finishing() {
        try {
          yield* messages;
        } catch (err) {
          throw callError(err, context);
        } finally {
          // Also when the reader stops early: the handler's signal tells it the call is over.
          context.abort(CALL_FINISHED);
        }
      }
      return { ...res, message: finishing() } as unknown as StreamResponse<I, O>;
    },
  };
}

async function* created<Desc extends DescMessage>(
  schema: Desc,
  outputs: AsyncIterable<MessageInitShape<Desc>>,
): AsyncIterable<MessageShape<Desc>> {
  for await (const o of outputs) yield create(schema, o);
}
