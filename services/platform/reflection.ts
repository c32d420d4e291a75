// gRPC server reflection (grpc.reflection.v1.ServerReflection, and v1alpha for older tools such
// as some grpcurl and Postman versions): what grpcurl, grpcui and Postman ask a server for to
// list its services and build their requests without the .proto files. Each listener answers for
// exactly the services it serves (reflection-descriptors.ts), itself and health included.
//
// One stream carries any number of requests, each answered in turn; a request that names what
// is not there gets an error_response on the stream (NOT_FOUND, as the protocol says), and the
// stream goes on. A file's answer holds the file and every file it imports, transitively.
import {
  create,
  type DescFile,
  fromBinary,
  type DescService,
  type MessageInitShape,
  toBinary,
} from "@bufbuild/protobuf";
import { Code, type ConnectRouter, type ServiceImpl } from "@connectrpc/connect";
import {
  ServerReflection,
  type ServerReflectionRequest,
  ServerReflectionRequestSchema,
  type ServerReflectionResponse,
  ServerReflectionResponseSchema,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  ServerReflection as ServerReflectionV1alpha,
  ServerReflectionRequestSchema as RequestV1alphaSchema,
  ServerReflectionResponseSchema as ResponseV1alphaSchema,
} from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { type DescribedApi, describeApi } from "./reflection-descriptors.js";
import { OPEN_SERVICE_MAX_REQUEST_BYTES } from "./request-memory.js";

/** Both versions of the service: a listener serves the two. */
export const REFLECTION_SERVICES: readonly DescService[] = [ServerReflection, ServerReflectionV1alpha];

interface Reflection {
  readonly v1: ServiceImpl<typeof ServerReflection>;
  readonly v1alpha: ServiceImpl<typeof ServerReflectionV1alpha>;
}

type Answer = MessageInitShape<typeof ServerReflectionResponseSchema>["messageResponse"];

const failure = (code: Code, message: string): Answer => ({
  case: "errorResponse",
  value: {
    errorCode: code,
    errorMessage: message,
  },
});

function answer(api: DescribedApi, request: ServerReflectionRequest): Answer {
  const files = (file: DescFile | undefined, missing: string): Answer =>
    file === undefined
      ? failure(Code.NotFound, missing)
      : {
          case: "fileDescriptorResponse",
          value: {
            fileDescriptorProto: api.withDependencies(file),
          },
        };
  const { case: kind, value } = request.messageRequest;
  switch (kind) {
    case "fileByFilename":
      return files(api.fileByName(value), `file_by_filename: no file ${value} here`);
    case "fileContainingSymbol":
      return files(api.fileContainingSymbol(value), `file_containing_symbol: no symbol ${value} here`);
    case "fileContainingExtension":
      return files(
        api.fileContainingExtension(value.containingType, value.extensionNumber),
        `file_containing_extension: no extension ${value.extensionNumber} of ${value.containingType} here`,
      );
    case "allExtensionNumbersOfType": {
      const numbers = api.extensionNumbersOf(value);
      if (numbers === undefined)
        return failure(Code.NotFound, `all_extension_numbers_of_type: no message ${value} here`);
      return {
        case: "allExtensionNumbersResponse",
        value: {
          baseTypeName: value,
          extensionNumber: numbers,
        },
      };
    }
    case "listServices":
      return {
        case: "listServicesResponse",
        value: {
          service: api.serviceNames.map((name) => ({ name })),
        },
      };
    default:
      return failure(
        Code.InvalidArgument,
        "message_request: set one of file_by_filename, file_containing_symbol, file_containing_extension, all_extension_numbers_of_type, list_services",
      );
  }
}

function respond(api: DescribedApi, request: ServerReflectionRequest): ServerReflectionResponse {
  return create(ServerReflectionResponseSchema, {
    validHost: request.host,
    originalRequest: request,
    messageResponse: answer(api, request),
  });
}

/**
 * Registers both versions of reflection, describing `services`: every service of a listener,
 * these two included.
 */
export function reflectionRoutes(services: readonly DescService[]): (router: ConnectRouter) => void {
  const reflection = createReflection(services);
  return (router) => {
    // Open on the public listener: requests of a few names, within a small limit.
    router.service(ServerReflection, reflection.v1, { readMaxBytes: OPEN_SERVICE_MAX_REQUEST_BYTES });
    router.service(ServerReflectionV1alpha, reflection.v1alpha, { readMaxBytes: OPEN_SERVICE_MAX_REQUEST_BYTES });
  };
}

function createReflection(services: readonly DescService[]): Reflection {
  const api = describeApi(services);
  return {
    v1: {
      async *serverReflectionInfo(requests) {
        for await (const request of requests) yield respond(api, request);
      },
    },
    // v1alpha's messages are v1's under another package, field for field: the same bytes.
    v1alpha: {
      async *serverReflectionInfo(requests) {
        for await (const request of requests) {
          const asV1 = fromBinary(ServerReflectionRequestSchema, toBinary(RequestV1alphaSchema, request));
          yield fromBinary(ResponseV1alphaSchema, toBinary(ServerReflectionResponseSchema, respond(api, asV1)));
        }
      },
    },
  };
}
