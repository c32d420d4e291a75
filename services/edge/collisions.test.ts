// A body field naming a path-bound field, as Envoy's RequestWeaver checks it (collisions.ts).
import { ScalarType } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { OtlpHttpService } from "../../gen/agentplane/analytics/v1/otlp_pb.js";
import { EdgeTestService } from "../../gen/agentplane/edgetest/v1/edgetest_pb.js";
import { ALL_MODULES } from "../modules.js";
import { checkBindingCollision } from "./collisions.js";
import { EdgeHttpError } from "./errors.js";
import { buildRouteTable, type Route } from "./routes.js";

// OtlpHttpService is left out: EdgeTestService.Upload stands in for it at POST /v1/logs (the Lua
// filter's raw-body paths), and it binds no path or body field that could collide.
const table = buildRouteTable([
  EdgeTestService,
  ...ALL_MODULES.flatMap((m) => m.services.map((s) => s.service)).filter(
    (s) => s.typeName !== OtlpHttpService.typeName,
  ),
]);
const route = (rpc: string) => table.routes.find((r) => r.method.name === rpc)!;

function detail(r: Route, bound: string, body: unknown): string | undefined {
  try {
    for (const b of r.pathBindings) checkBindingCollision(b.fields, bound, r.body, body);
    return undefined;
  } catch (e) {
    expect(e).toBeInstanceOf(EdgeHttpError);
    expect((e as EdgeHttpError).status).toBe(400);
    return (e as Error).message;
  }
}

describe("checkBindingCollision", () => {
  it('body "*": the proto name with another string is the 400; the same string, the JSON name, null or another type are not', () => {
    const r = route("UpdateSession");
    expect(detail(r, "A", { session_id: "B" })).toBe(
      'The binding value "A" of the field session_id is conflicting with the value "B" in the body.',
    );
    expect(detail(r, "A", { session_id: "" })).toBe(
      'The binding value "A" of the field session_id is conflicting with the value "" in the body.',
    );
    for (const body of [
      { session_id: "A" },
      { sessionId: "B" },
      { session_id: null },
      { session_id: 5 },
      { session_id: { x: 1 } },
      {},
      [],
      "x",
    ]) {
      expect(detail(r, "A", body), JSON.stringify(body)).toBeUndefined();
    }
  });

  it('body "<field>": a binding inside the body field is compared one object level at a time by proto name', () => {
    const r = route("UpdateThing"); // PATCH /v1/things/{thing.id}, body "thing"
    expect(detail(r, "t1", { id: "t2" })).toBe(
      'The binding value "t1" of the field id is conflicting with the value "t2" in the body.',
    );
    expect(detail(r, "t1", { id: "t1", display_name: "x" })).toBeUndefined();
    // A binding outside the body field cannot collide.
    const limit = route("SetThingLimit"); // PUT /v1/things/{thing_id}/limit, body "limit"
    expect(detail(limit, "t1", 5)).toBeUndefined();
  });

  it("every path variable of a routed method with a body binds a string field (what the check compares)", () => {
    const withBody = table.routes.filter((r) => r.body.kind !== "none" && r.pathBindings.length > 0);
    expect(withBody.map((r) => r.method.name).sort()).toEqual([
      "ArchiveThing",
      "CreateThing",
      "InterruptSession",
      "PostMessage",
      "RetryComputerProvisioning",
      "SetThingLimit",
      "UpdateComputer",
      "UpdateSession",
      "UpdateThing",
    ]);
    for (const r of withBody) {
      for (const b of r.pathBindings) {
        const leaf = b.fields[b.fields.length - 1]!;
        expect(leaf.fieldKind === "scalar" && leaf.scalar === ScalarType.STRING, `${r.method.name} ${b.name}`).toBe(
          true,
        );
      }
    }
  });
});
