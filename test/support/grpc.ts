// A @grpc/grpc-js client for any generated service, (de)serializing with protobuf-es: proves
// that a plain gRPC client, not only Connect, can call our RPCs.
import * as grpc from "@grpc/grpc-js";
import {
  fromBinary,
  toBinary,
  type DescMessage,
  type DescService,
  type MessageInitShape,
  type MessageShape,
  create,
} from "@bufbuild/protobuf";

export interface GrpcCaller {
  call<I extends DescMessage, O extends DescMessage>(
    method: { input: I; output: O; name: string },
    request: MessageInitShape<I>,
    metadata?: Record<string, string>,
  ): Promise<MessageShape<O>>;
  /** A server-streaming call: every message, and the response's initial metadata. */
  serverStream<I extends DescMessage, O extends DescMessage>(
    method: { input: I; output: O; name: string },
    request: MessageInitShape<I>,
    metadata?: Record<string, string>,
  ): Promise<{ messages: MessageShape<O>[]; header: grpc.Metadata }>;
  close(): void;
}

/** A client of `service` at `grpcUrl`; `defaultMetadata` (e.g. an authorization header) goes with every call. */
export function grpcClient(
  service: DescService,
  grpcUrl: string,
  defaultMetadata: Record<string, string> = {},
): GrpcCaller {
  const address = grpcUrl.replace(/^https?:\/\//, "");
  const definition: Record<string, grpc.MethodDefinition<any, any>> = {};
  for (const method of service.methods) {
    definition[method.localName] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: false,
      responseStream: method.methodKind === "server_streaming",
      requestSerialize: (m: any) => Buffer.from(toBinary(method.input, m)),
      requestDeserialize: (b: Buffer) => fromBinary(method.input, b),
      responseSerialize: (m: any) => Buffer.from(toBinary(method.output, m)),
      responseDeserialize: (b: Buffer) => fromBinary(method.output, b),
    };
  }
  const Client = grpc.makeGenericClientConstructor(definition as grpc.ServiceDefinition, service.typeName);
  const client = new Client(address, grpc.credentials.createInsecure()) as unknown as grpc.Client &
    Record<string, (...args: any[]) => any>;
  const metadataOf = (metadata: Record<string, string>) => {
    const md = new grpc.Metadata();
    for (const [k, v] of Object.entries({ ...defaultMetadata, ...metadata })) md.set(k, v);
    return md;
  };
  const localNameOf = (name: string) => service.methods.find((m) => m.name === name)!.localName;
  return {
    serverStream(method, request, metadata = {}) {
      return new Promise((resolve, reject) => {
        const call = client[localNameOf(method.name)]!(create(method.input, request), metadataOf(metadata));
        const messages: MessageShape<typeof method.output>[] = [];
        let header = new grpc.Metadata();
        call.on("metadata", (md: grpc.Metadata) => {
          header = md;
        });
        call.on("data", (m: MessageShape<typeof method.output>) => messages.push(m));
        call.on("error", reject);
        call.on("end", () => resolve({ messages, header }));
      });
    },
    call(method, request, metadata = {}) {
      const md = metadataOf(metadata);
      const localName = localNameOf(method.name);
      return new Promise((resolve, reject) => {
        client[localName]!(
          create(method.input, request),
          md,
          (err: grpc.ServiceError | null, res: MessageShape<typeof method.output>) =>
            err ? reject(err) : resolve(res),
        );
      });
    },
    close: () => client.close(),
  };
}
