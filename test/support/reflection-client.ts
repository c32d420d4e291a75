// A gRPC server reflection client built as a third-party tool builds one, nothing of ours in it
// but the vendored .proto: @grpc/grpc-js speaks the bidirectional stream, @grpc/proto-loader
// (protobuf.js) reads the reflection proto and, from the file descriptors the server returns,
// builds a client of any service it describes. What grpcurl does, in TypeScript.
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

export type ReflectionVersion = "v1" | "v1alpha";

/** proto-loader's plain object for a ServerReflectionResponse (snake_case, oneof name set). */
export interface ReflectionAnswer {
  valid_host: string;
  original_request: Record<string, unknown>;
  message_response:
    | "file_descriptor_response"
    | "all_extension_numbers_response"
    | "list_services_response"
    | "error_response";
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  all_extension_numbers_response?: { base_type_name: string; extension_number: number[] };
  list_services_response?: { service: { name: string }[] };
  error_response?: { error_code: number; error_message: string };
}

const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

function reflectionService(version: ReflectionVersion): grpc.ServiceClientConstructor {
  const file = fileURLToPath(new URL(`../../proto/grpc/reflection/${version}/reflection.proto`, import.meta.url));
  const loaded = grpc.loadPackageDefinition(protoLoader.loadSync(file, LOADER_OPTIONS));
  return (loaded.grpc as any).reflection[version].ServerReflection;
}

const addressOf = (url: string) => url.replace(/^https?:\/\//, "");

function metadataOf(headers: Record<string, string>): grpc.Metadata {
  const metadata = new grpc.Metadata();
  for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
  return metadata;
}

/** A reflection stream: ask() sends one request and resolves with its answer, in order. */
export interface ReflectionStream {
  ask(request: Record<string, unknown>): Promise<ReflectionAnswer>;
  /** Ends the client's side; resolves when the server ended the stream (its status, or the error). */
  end(): Promise<grpc.StatusObject | grpc.ServiceError>;
}

export function openReflection(
  url: string,
  headers: Record<string, string> = {},
  version: ReflectionVersion = "v1",
): { stream: ReflectionStream; client: grpc.Client } {
  const Client = reflectionService(version);
  const client = new Client(addressOf(url), grpc.credentials.createInsecure());
  const call = (client as any).ServerReflectionInfo(metadataOf(headers)) as grpc.ClientDuplexStream<
    Record<string, unknown>,
    ReflectionAnswer
  >;
  const waiting: { resolve: (a: ReflectionAnswer) => void; reject: (e: Error) => void }[] = [];
  let failure: grpc.ServiceError | undefined;
  const ended = new Promise<grpc.StatusObject | grpc.ServiceError>((resolve) => {
    call.on("status", (status: grpc.StatusObject) => {
      if (status.code === grpc.status.OK) resolve(status);
    });
    call.on("error", (err: grpc.ServiceError) => {
      failure = err;
      for (const w of waiting.splice(0)) w.reject(err);
      resolve(err);
    });
  });
  call.on("data", (answer: ReflectionAnswer) => waiting.shift()?.resolve(answer));
  return {
    client,
    stream: {
      ask(request) {
        if (failure) return Promise.reject(failure);
        return new Promise((resolve, reject) => {
          waiting.push({ resolve, reject });
          call.write(request);
        });
      },
      end() {
        call.end();
        return ended;
      },
    },
  };
}

/** One stream per question, as `grpcurl list` and `describe` do; rejects with the call's error. */
export async function reflect(
  url: string,
  request: Record<string, unknown>,
  headers: Record<string, string> = {},
  version: ReflectionVersion = "v1",
): Promise<ReflectionAnswer> {
  const { stream, client } = openReflection(url, headers, version);
  try {
    const answer = await stream.ask(request);
    await stream.end();
    return answer;
  } finally {
    client.close();
  }
}

/** The full names of the services the server lists. */
export async function listServices(
  url: string,
  headers: Record<string, string> = {},
  version: ReflectionVersion = "v1",
): Promise<string[]> {
  const answer = await reflect(url, { list_services: "" }, headers, version);
  if (!answer.list_services_response) throw new Error(`no service list: ${JSON.stringify(answer.error_response)}`);
  return answer.list_services_response.service.map((s) => s.name);
}

/** A FileDescriptorSet's bytes: each FileDescriptorProto as its field 1 (`repeated file = 1`). */
export function fileDescriptorSet(files: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [];
  for (const file of files) {
    const length: number[] = [];
    let n = file.length;
    while (n > 0x7f) {
      length.push((n & 0x7f) | 0x80);
      n >>>= 7;
    }
    length.push(n);
    parts.push(Buffer.from([0x0a, ...length]), file);
  }
  return Buffer.concat(parts);
}

/** The file declaring `symbol`, with its imports: rejects with the server's error_response. */
export async function filesContainingSymbol(
  url: string,
  symbol: string,
  headers: Record<string, string> = {},
): Promise<Buffer[]> {
  const answer = await reflect(url, { file_containing_symbol: symbol }, headers);
  if (!answer.file_descriptor_response)
    throw new Error(`${symbol}: ${answer.error_response?.error_code} ${answer.error_response?.error_message}`);
  return answer.file_descriptor_response.file_descriptor_proto;
}

/**
 * A grpc-js client of `service` ("pkg.Service") built from the descriptors reflection returned
 * for it, nothing else: proto-loader reads them as a FileDescriptorSet.
 */
export async function reflectedClient(
  url: string,
  service: string,
  headers: Record<string, string> = {},
): Promise<grpc.Client & Record<string, (...args: any[]) => any>> {
  const files = await filesContainingSymbol(url, service, headers);
  const definition = protoLoader.loadFileDescriptorSetFromBuffer(fileDescriptorSet(files), LOADER_OPTIONS);
  const Client = definition[service] as grpc.ServiceDefinition | undefined;
  if (Client === undefined) throw new Error(`${service} is not in the returned descriptors`);
  const Constructor = grpc.makeGenericClientConstructor(Client, service);
  return new Constructor(addressOf(url), grpc.credentials.createInsecure()) as any;
}

/** A unary call of a reflected client: the response as proto-loader's plain object. */
export function unary(
  client: grpc.Client & Record<string, (...args: any[]) => any>,
  method: string,
  request: Record<string, unknown>,
  headers: Record<string, string>,
): Promise<any> {
  return new Promise((resolve, reject) => {
    const fn = client[method];
    if (fn === undefined) throw new Error(`no method ${method}`);
    fn.call(client, request, metadataOf(headers), (err: grpc.ServiceError | null, res: unknown) =>
      err ? reject(err) : resolve(res),
    );
  });
}
