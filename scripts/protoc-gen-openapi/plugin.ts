// The plugin: one CodeGeneratorRequest (strategy: all) in, openapi/openapi.json out. Option
// `envoy=<path>` names the Envoy config whose transcoder lists the public services
// (public-services.ts); buf runs the plugin in the directory it runs in.
import { create, createFileRegistry } from "@bufbuild/protobuf";
import type { Plugin } from "@bufbuild/protoplugin";
import {
  CodeGeneratorResponse_Feature,
  CodeGeneratorResponseSchema,
  FileDescriptorSetSchema,
} from "@bufbuild/protobuf/wkt";
import { buildDocument } from "./document.js";
import { transcodedServices } from "./public-services.js";

export const OUTPUT_FILE = "openapi/openapi.json";

export const openapiPlugin: Plugin = {
  name: "protoc-gen-openapi",
  version: "v1",
  run(request) {
    const options = new Map(
      request.parameter
        .split(",")
        .filter((p) => p !== "")
        .map((p) => {
          const eq = p.indexOf("=");
          return [p.slice(0, eq), p.slice(eq + 1)] as const;
        }),
    );
    const envoy = options.get("envoy");
    if (envoy === undefined) throw new Error("protoc-gen-openapi: option envoy=<path of envoy.yaml> is required");
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: request.protoFile }));
    const document = buildDocument(registry, transcodedServices(envoy));
    return create(CodeGeneratorResponseSchema, {
      supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
      file: [{ name: OUTPUT_FILE, content: `${JSON.stringify(document, null, 2)}\n` }],
    });
  },
};
