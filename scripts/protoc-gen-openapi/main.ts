// protoc-gen-openapi: the OpenAPI 3.1 document of the public REST routes (gen/openapi/openapi.json),
// written by `buf generate` (buf.gen.yaml runs this file with tsx). See plugin.ts.
import { runNodeJs } from "@bufbuild/protoplugin";
import { openapiPlugin } from "./plugin.js";

runNodeJs(openapiPlugin);
