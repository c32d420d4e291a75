// Which services the document covers: exactly those Envoy's gRPC-JSON transcoder lists in
// envoy.yaml. That list is what makes a service public over REST (the internal services are
// absent from it), so the document reads it rather than keeping a second copy.
import { readFileSync } from "node:fs";
import { parse } from "yaml";

const TRANSCODER_TYPE = "type.googleapis.com/envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder";

/** The fully qualified service names of the transcoder's `services` in the Envoy config at `path`. */
export function transcodedServices(path: string): string[] {
  const found = findTranscoder(parse(readFileSync(path, "utf8")));
  if (found === undefined) throw new Error(`${path}: no grpc_json_transcoder filter with a services list`);
  return found;
}

function findTranscoder(node: unknown): string[] | undefined {
  if (Array.isArray(node)) {
    for (const item of node) {
      const found = findTranscoder(item);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (node === null || typeof node !== "object") return undefined;
  const record = node as Record<string, unknown>;
  if (record["@type"] === TRANSCODER_TYPE && Array.isArray(record["services"])) {
    return record["services"].map(String);
  }
  return findTranscoder(Object.values(record));
}
