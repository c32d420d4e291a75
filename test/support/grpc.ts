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
      responseStream: false,
      requestSerialize: (m: any) => Buffer.from(toBinary(method.input, m)),
      requestDeserialize: (b: Buffer) => fromBinary(method.input, b),
      responseSerialize: (m: any) => Buffer.from(toBinary(method.output, m)),
      responseDeserialize: (b: Buffer) => fromBinary(method.output, b),
    };
  }
  const Client = grpc.makeGenericClientConstructor(definition as grpc.ServiceDefinition, service.typeName);
  const client = new Client(address, grpc.credentials.createInsecure()) as unknown as grpc.Client &
    Record<string, (...args: any[]) => any>;
  return {
    call(method, request, metadata = {}) {
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries({ ...defaultMetadata, ...metadata })) md.set(k, v);
      const localName = service.methods.find((m) => m.name === method.name)!.localName;
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
