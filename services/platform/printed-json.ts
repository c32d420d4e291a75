// Messages printed as JSON the way Envoy's transcoder prints them (envoy.yaml: print_options
// always_print_primitive_fields true, preserve_proto_field_names false): JSON names, every
// implicit field. Whatever writes a JSON body itself (the TypeScript edge, the HttpBody streams)
// prints with these, so both edges send the same bytes.
import { create, toJsonString, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";

export const ENVOY_JSON_OPTIONS = { alwaysEmitImplicit: true } as const;

export function printedMessage<Desc extends DescMessage>(schema: Desc, init: MessageInitShape<Desc>): string {
  return toJsonString(schema, create(schema, init), ENVOY_JSON_OPTIONS);
}
