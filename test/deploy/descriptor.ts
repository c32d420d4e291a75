// What the Envoy descriptor set (deploy/envoy/api.binpb, written by `npm run generate`) holds:
// every service but the test-only edgetest one, with its methods and their google.api.http rules,
// additional bindings included.
import { readFileSync } from "node:fs";
import { createFileRegistry, fromBinary, getOption, hasOption } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";

export const DESCRIPTOR_PATH = new URL("../../deploy/envoy/api.binpb", import.meta.url);

export interface HttpBinding {
  /** GET, POST, ... or the custom kind. */
  readonly verb: string;
  readonly path: string;
}

export interface DescribedMethod {
  readonly name: string;
  /** Empty when the method carries no google.api.http option. */
  readonly bindings: readonly HttpBinding[];
}

export interface DescribedService {
  readonly typeName: string;
  readonly methods: readonly DescribedMethod[];
}

function binding(rule: HttpRule): HttpBinding | undefined {
  const p = rule.pattern;
  switch (p.case) {
    case "get":
    case "put":
    case "post":
    case "delete":
    case "patch":
      return { verb: p.case.toUpperCase(), path: p.value };
    case "custom":
      return { verb: p.value.kind, path: p.value.path };
    default:
      return undefined;
  }
}

/** The proto files a FileDescriptorSet holds, by their path below proto/. */
export function describedFiles(bytes: Uint8Array): string[] {
  return fromBinary(FileDescriptorSetSchema, bytes).file.map((f) => f.name);
}

/** Every service of a FileDescriptorSet, by full name. */
export function describeServices(bytes: Uint8Array): Map<string, DescribedService> {
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, bytes));
  const out = new Map<string, DescribedService>();
  for (const desc of registry) {
    if (desc.kind !== "service") continue;
    const methods = desc.methods.map((m): DescribedMethod => {
      if (!hasOption(m, http)) return { name: m.name, bindings: [] };
      const rule = getOption(m, http);
      const bindings = [rule, ...rule.additionalBindings].map(binding).filter((b): b is HttpBinding => b !== undefined);
      return { name: m.name, bindings };
    });
    out.set(desc.typeName, { typeName: desc.typeName, methods });
  }
  return out;
}

export function readDescriptor(): Uint8Array {
  return readFileSync(DESCRIPTOR_PATH);
}
