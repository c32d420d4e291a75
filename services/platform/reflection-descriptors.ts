// What server reflection (reflection.ts) describes of one listener: the files that declare its
// services, with every file they import, and where each symbol of those files is declared. Read
// from the DescFile objects the services are built from (gen/), so a reflection client sees the
// contract the server runs, and nothing of the services another listener serves.
import { type DescFile, type DescService, toBinary } from "@bufbuild/protobuf";
import { nestedTypes } from "@bufbuild/protobuf/reflect";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";

export interface DescribedApi {
  /** The full names of the services, sorted. */
  readonly serviceNames: readonly string[];
  /** A file by its path ("agentplane/sessions/v1alpha1/sessions.proto"). */
  fileByName(name: string): DescFile | undefined;
  /**
   * The file declaring a fully-qualified symbol: a service or a method of one, a message, a
   * field or a oneof of one, an enum or one of its values (named in the enum's scope, as
   * protobuf does), an extension. A service is found only if it is one of `serviceNames`: a
   * file may declare one served on the other listener (sessions.proto declares SessionService,
   * public, and SessionRunnerService, internal), which is in the file but not served here.
   */
  fileContainingSymbol(symbol: string): DescFile | undefined;
  /** The file declaring the extension `number` of the message `extendee`. */
  fileContainingExtension(extendee: string, number: number): DescFile | undefined;
  /** The numbers of the known extensions of a message; undefined when no such message is described. */
  extensionNumbersOf(typeName: string): number[] | undefined;
  /**
   * The serialized FileDescriptorProto of `file`, then of every file it imports, directly or
   * not, each once: what a client needs to build the file's types.
   */
  withDependencies(file: DescFile): Uint8Array[];
}

/** Every file `files` declare or import, imports after the files that import them. */
function closure(files: Iterable<DescFile>): DescFile[] {
  const seen = new Set<DescFile>();
  const visit = (file: DescFile) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const dependency of file.dependencies) visit(dependency);
  };
  for (const file of files) visit(file);
  return [...seen];
}

/** Every symbol a file declares, by full name, but the services not in `served`. */
function* symbolsOf(file: DescFile, served: ReadonlySet<string>): Iterable<string> {
  for (const type of nestedTypes(file)) {
    if (type.kind === "service" && !served.has(type.typeName)) continue;
    yield type.typeName;
    switch (type.kind) {
      case "service":
        for (const method of type.methods) yield `${type.typeName}.${method.name}`;
        break;
      case "message":
        for (const field of type.fields) yield `${type.typeName}.${field.name}`;
        for (const oneof of type.oneofs) yield `${type.typeName}.${oneof.name}`;
        break;
      case "enum": {
        // An enum's values are siblings of the enum: pkg.Enum's VALUE is pkg.VALUE.
        const scope = type.parent?.typeName ?? file.proto.package;
        for (const value of type.values) yield scope === "" ? value.name : `${scope}.${value.name}`;
        break;
      }
    }
  }
}

export function describeApi(services: readonly DescService[]): DescribedApi {
  const serviceNames = [...new Set(services.map((s) => s.typeName))].sort();
  const served = new Set(serviceNames);
  const files = closure(services.map((s) => s.file));
  const byName = new Map(files.map((f) => [f.proto.name, f]));
  const bySymbol = new Map<string, DescFile>();
  const extensions = new Map<string, Map<number, DescFile>>();
  const messages = new Set<string>();
  for (const file of files) {
    for (const symbol of symbolsOf(file, served)) if (!bySymbol.has(symbol)) bySymbol.set(symbol, file);
    for (const type of nestedTypes(file)) {
      if (type.kind === "message") messages.add(type.typeName);
      if (type.kind === "extension") {
        const numbers = extensions.get(type.extendee.typeName) ?? new Map<number, DescFile>();
        numbers.set(type.number, file);
        extensions.set(type.extendee.typeName, numbers);
      }
    }
  }
  // Serialized once, when first asked for.
  const serialized = new Map<DescFile, Uint8Array>();
  const bytesOf = (file: DescFile) => {
    let bytes = serialized.get(file);
    if (bytes === undefined) serialized.set(file, (bytes = toBinary(FileDescriptorProtoSchema, file.proto)));
    return bytes;
  };
  return {
    serviceNames,
    fileByName: (name) => byName.get(name),
    fileContainingSymbol: (symbol) => bySymbol.get(symbol),
    fileContainingExtension: (extendee, number) => extensions.get(extendee)?.get(number),
    extensionNumbersOf: (typeName) =>
      messages.has(typeName) ? [...(extensions.get(typeName)?.keys() ?? [])].sort((a, b) => a - b) : undefined,
    withDependencies: (file) => closure([file]).map(bytesOf),
  };
}
