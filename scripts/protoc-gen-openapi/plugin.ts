// The plugin: one CodeGeneratorRequest (strategy: all) in, openapi/openapi.json out. Option
// `envoy=<path>` names the Envoy config whose transcoder lists the public services
// (public-services.ts); buf runs the plugin in the directory it runs in. Each `exclude=<service>`
// leaves a listed service out (the web pages: routed like the API, but not part of it).
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
    const options = request.parameter
      .split(",")
      .filter((p) => p !== "")
      .map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)] as const);
    const envoy = options.find(([name]) => name === "envoy")?.[1];
    const excluded = new Set(options.filter(([name]) => name === "exclude").map(([, value]) => value));
    if (envoy === undefined) throw new Error("protoc-gen-openapi: option envoy=<path of envoy.yaml> is required");
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: request.protoFile }));
    const services = transcodedServices(envoy);
    for (const name of excluded) {
      if (!services.includes(name)) throw new Error(`protoc-gen-openapi: exclude=${name} is not a transcoded service`);
    }
    const document = buildDocument(
      registry,
      services.filter((name) => !excluded.has(name)),
    );
    return create(CodeGeneratorResponseSchema, {
      supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
      file: [{ name: OUTPUT_FILE, content: `${JSON.stringify(document, null, 2)}\n` }],
    });
  },
};
