// Route-table construction from descriptors, including the annotations it must refuse at start.
import { create, createFileRegistry, setExtension, type DescService, type MessageInitShape } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
  MethodOptionsSchema,
  file_google_protobuf_descriptor,
} from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { EdgeTestService } from "../../gen/agentplane/edgetest/v1/edgetest_pb.js";
import { http } from "../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../gen/google/api/http_pb.js";
import { buildRouteTable } from "./routes.js";

/** A one-method service `t.S/M` (Req{string id; Inner inner; repeated string tags}) with `rule`. */
function serviceWith(rule: MessageInitShape<typeof HttpRuleSchema>, serverStreaming = false): DescService {
  const options = create(MethodOptionsSchema);
  setExtension(options, http, create(HttpRuleSchema, rule));
  const opt = FieldDescriptorProto_Label.OPTIONAL;
  const file = create(FileDescriptorProtoSchema, {
    name: "t.proto",
    package: "t",
    syntax: "proto3",
    messageType: [
      {
        name: "Inner",
        field: [{ name: "x", number: 1, type: FieldDescriptorProto_Type.STRING, label: opt, jsonName: "x" }],
      },
      {
        name: "Req",
        field: [
          { name: "id", number: 1, type: FieldDescriptorProto_Type.STRING, label: opt, jsonName: "id" },
          {
            name: "inner",
            number: 2,
            type: FieldDescriptorProto_Type.MESSAGE,
            typeName: ".t.Inner",
            label: opt,
            jsonName: "inner",
          },
          {
            name: "tags",
            number: 3,
            type: FieldDescriptorProto_Type.STRING,
            label: FieldDescriptorProto_Label.REPEATED,
            jsonName: "tags",
          },
        ],
      },
    ],
    service: [
      { name: "S", method: [{ name: "M", inputType: ".t.Req", outputType: ".t.Req", options, serverStreaming }] },
    ],
  });
  const registry = createFileRegistry(file, (name) =>
    name === file_google_protobuf_descriptor.name ? file_google_protobuf_descriptor : undefined,
  );
  return registry.getService("t.S")!;
}

describe("buildRouteTable", () => {
  it("routes every annotated method and additional binding of the test service", () => {
    const table = buildRouteTable([EdgeTestService]);
    const routes = table.routes.map((r) => `${r.httpMethod} ${r.template.source}`);
    expect(routes).toHaveLength(EdgeTestService.methods.length - 1 /* Unrouted */ + 1 /* additional binding */);
    expect(routes).toContain("PATCH /v1/things/{thing.id}");
    expect(routes).toContain("SEARCH /v1/things");
    const update = table.routes.find((r) => r.method.name === "UpdateThing")!;
    expect(update.body).toMatchObject({ kind: "field", field: { name: "thing" } });
    expect(update.pathBindings[0]!.fields.map((f) => f.name)).toEqual(["thing", "id"]);
  });

  it("accepts a valid rule built at runtime", () => {
    const table = buildRouteTable([serviceWith({ pattern: { case: "get", value: "/t/{inner.x}" } })]);
    expect(table.matcher.lookup("GET", "/t/abc")?.route.method.name).toBe("M");
  });

  it.each([
    [{ pattern: { case: "get", value: "/t/{nope}" } }, /has no field "nope"/],
    [{ pattern: { case: "get", value: "/t/{id.x}" } }, /not a singular message field/],
    [{ pattern: { case: "get", value: "/t/{tags}" } }, /cannot be bound from a path segment/],
    [{ pattern: { case: "get", value: "/t/{inner}" } }, /cannot be bound from a path segment/],
    [{ pattern: { case: "get", value: "t/{id}" } }, /must start with/],
    [{ pattern: { case: "post", value: "/t" }, body: "missing" }, /body: t.Req has no field "missing"/],
    [{ pattern: { case: "post", value: "/t" }, responseBody: "missing" }, /response_body/],
    [{ pattern: { case: undefined } }, /without a pattern/],
    [
      { pattern: { case: "get", value: "/t" }, additionalBindings: [{ pattern: { case: "get", value: "/t" } }] },
      /duplicate route/,
    ],
  ] as [MessageInitShape<typeof HttpRuleSchema>, RegExp][])("refuses an invalid rule: %j", (rule, message) => {
    expect(() => buildRouteTable([serviceWith(rule)])).toThrow(message);
  });

  it("refuses a streaming method with google.api.http", () => {
    expect(() => buildRouteTable([serviceWith({ pattern: { case: "get", value: "/t" } }, true)])).toThrow(/only unary/);
  });
});
