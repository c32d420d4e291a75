// How deeply a session tag's metadata (free-form JSON, a google.protobuf.Struct) may nest: deep
// enough for every protobuf reader to decode each read of the session with its default limits,
// and no deeper (services/sessions/settings.ts). Through the REST edge and over gRPC, read back
// by @grpc/grpc-js with @grpc/proto-loader (protobufjs' decoder and defaults) and by protobuf-es.
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { create, toBinary, type JsonObject } from "@bufbuild/protobuf";
import { reflect, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ListSessionsResponseSchema,
  SessionRunnerService,
  SessionService,
  type ListSessionsResponse,
} from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { SETTINGS_LIMITS } from "../services/sessions/settings.js";
import {
  api,
  createTestOrg,
  createTestUser,
  type TestUser,
  bearer,
  createTestServiceAccount,
} from "./support/fixtures.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { startTestServer, type TestServer } from "./support/server.js";

const LIMIT = SETTINGS_LIMITS.tagMetadataDepth;

/** Metadata of `levels` nested objects ({"a": {"a": … "leaf"}}): the deepest shape per level. */
function nested(levels: number): JsonObject {
  let value: JsonObject | string = "leaf";
  for (let i = 0; i < levels; i++) value = { a: value };
  return value as JsonObject;
}

/** Levels of objects in metadata as protobuf-es gives it (a JSON object). */
function levelsOf(value: unknown): number {
  let levels = 0;
  for (
    let node = value as Record<string, unknown> | undefined;
    node && typeof node === "object";
    node = node.a as Record<string, unknown> | undefined
  )
    levels++;
  return levels;
}

/** Levels of objects in metadata as protobufjs gives it ({fields: {a: {structValue: {fields: …}}}}). */
function levelsOfStruct(value: any): number {
  let levels = 0;
  for (let node = value; node?.fields; node = node.fields.a?.structValue) levels++;
  return levels;
}

/** `levels` arrays nested ([[…["leaf"]…]]). */
function arrays(levels: number): unknown[] {
  let value: unknown[] = ["leaf"];
  for (let i = 1; i < levels; i++) value = [value];
  return value;
}

/**
 * Nesting of a message as the strictest readers count it, below the top-level message:
 * `delimited` counts every length-delimited field (messages, map entries, strings), as the C++
 * JSON printer of Envoy's transcoder does (UntypedMessage::DecodeDelimited); `messages` counts
 * nested messages and map entries, as Java's and upb's CodedInputStream do. Both stop at 100.
 */
function nesting(message: ReflectMessage): { delimited: number; messages: number } {
  let delimited = 0;
  let messages = 0;
  const down = (m: ReflectMessage, d: number, n: number) => {
    for (const field of m.fields) {
      if (!m.isSet(field)) continue;
      if (field.fieldKind === "message") {
        down(m.get(field) as ReflectMessage, d + 1, n + 1);
      } else if (field.fieldKind === "list") {
        for (const item of m.get(field)) {
          if (field.listKind === "message") down(item as ReflectMessage, d + 1, n + 1);
          else delimited = Math.max(delimited, d + 1);
        }
      } else if (field.fieldKind === "map") {
        // An entry is a message of its own: key (a string here) and value.
        for (const [, value] of m.get(field)) {
          if (field.mapKind === "message") down(value as ReflectMessage, d + 2, n + 2);
          else delimited = Math.max(delimited, d + 2);
          messages = Math.max(messages, n + 1);
        }
      } else if (field.fieldKind === "scalar" && typeof m.get(field) === "string") {
        delimited = Math.max(delimited, d + 1);
      }
    }
    delimited = Math.max(delimited, d);
    messages = Math.max(messages, n);
  };
  down(message, 0, 0);
  return { delimited, messages };
}

/** A list page holding one session tagged with `levels` of metadata, built in memory. */
function pageWith(levels: number): ListSessionsResponse {
  return create(ListSessionsResponseSchema, {
    sessions: [{ sessionId: "s", sessionSettings: { tags: [{ name: "t", metadata: nested(levels) }] } }],
  });
}

describe("tag metadata nesting", () => {
  let server: TestServer;
  let owner: TestUser;
  let runner: GrpcCaller;
  let protobufEs: GrpcCaller;
  // @grpc/grpc-js with the service loaded by @grpc/proto-loader: protobufjs decodes the answers.
  let protobufJs: grpc.Client & Record<string, (...args: any[]) => any>;

  beforeAll(async () => {
    server = await startTestServer();
    const orgId = await createTestOrg(server.platform.db, "Metadata depth");
    owner = await createTestUser(server.platform.db, orgId, "owner");
    runner = grpcClient(
      SessionRunnerService,
      server.internalGrpcUrl,
      bearer(await createTestServiceAccount(server.platform.db)),
    );
    protobufEs = grpcClient(SessionService, server.grpcUrl);
    const definition = protoLoader.loadSync("agentplane/sessions/v1alpha1/sessions.proto", { includeDirs: ["proto"] });
    const pkg = grpc.loadPackageDefinition(definition) as any;
    protobufJs = new pkg.agentplane.sessions.v1alpha1.SessionService(
      server.grpcUrl.replace(/^https?:\/\//, ""),
      grpc.credentials.createInsecure(),
    );
  });
  afterAll(async () => {
    runner?.close();
    protobufEs?.close();
    protobufJs?.close();
    await server?.close();
  });

  const auth = () => ({ authorization: `Bearer ${owner.key}` });
  const newSession = () =>
    runner.call(SessionRunnerService.method.createSession, { orgId: owner.orgId, userId: owner.userId });
  const patch = (sessionId: string, metadata: unknown) =>
    api(server.restUrl, owner.key, `/api/v0/sessions/${sessionId}`, {
      method: "PATCH",
      body: { sessionSettings: { tags: [{ name: "deep", metadata }] } },
    });

  function viaProtobufJs(method: string, request: object): Promise<any> {
    const md = new grpc.Metadata();
    md.set("authorization", auth().authorization);
    return new Promise((resolve, reject) =>
      protobufJs[method]!(request, md, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res))),
    );
  }

  it(`takes ${LIMIT} levels, and every read of the session decodes in protobufjs and protobuf-es with their default limits`, async () => {
    const s = await newSession();
    expect((await patch(s.sessionId, nested(LIMIT))).status).toBe(200);

    const got = await viaProtobufJs("getSession", { sessionId: s.sessionId });
    expect(levelsOfStruct(got.sessionSettings.tags[0].metadata)).toBe(LIMIT);
    const listed = await viaProtobufJs("listSessions", { limit: "100" });
    expect(listed.sessions.map((x: any) => x.sessionId)).toContain(s.sessionId);

    const es = await protobufEs.call(SessionService.method.getSession, { sessionId: s.sessionId }, auth());
    expect(levelsOf(es.sessionSettings!.tags[0]!.metadata)).toBe(LIMIT);
    const esList = await protobufEs.call(SessionService.method.listSessions, { limit: "100" }, auth());
    expect(levelsOf(esList.sessions.find((x) => x.sessionId === s.sessionId)!.sessionSettings!.tags[0]!.metadata)).toBe(
      LIMIT,
    );

    // A list page (the deepest answer holding a session) as Java, upb and Envoy count it: at
    // their limit of 100, not past it.
    expect(nesting(reflect(ListSessionsResponseSchema, pageWith(LIMIT)))).toEqual({ delimited: 100, messages: 99 });
    expect(nesting(reflect(ListSessionsResponseSchema, pageWith(LIMIT + 1)))).toEqual({
      delimited: 103,
      messages: 102,
    });
  });

  it("the protobufjs reader of this test does refuse what nests too deep", () => {
    // Not an answer of the service (it refuses the write): a page encoded here and decoded as
    // the client above decodes answers, to show the limit that client reads with.
    const definition = protoLoader.loadSync("agentplane/sessions/v1alpha1/sessions.proto", { includeDirs: ["proto"] });
    const service = definition["agentplane.sessions.v1alpha1.SessionService"] as grpc.ServiceDefinition;
    const decode = (levels: number) =>
      service.ListSessions!.responseDeserialize(Buffer.from(toBinary(ListSessionsResponseSchema, pageWith(levels))));
    expect(levelsOfStruct(decode(LIMIT).sessions[0].sessionSettings.tags[0].metadata)).toBe(LIMIT);
    // ListSessionsResponse > SessionListItem > SessionSettings > SessionTag, then a Struct and a
    // Value per level: level 49 takes its 101st message.
    expect(() => decode(48)).not.toThrow();
    expect(() => decode(49)).toThrow(/maximum nesting depth exceeded/);
  });

  it(`refuses ${LIMIT + 1} levels (objects or arrays) with a 400 naming the field and the limit, through the edge and over gRPC; nothing is stored`, async () => {
    const s = await newSession();
    const before = (await api(server.restUrl, owner.key, `/api/v0/sessions/${s.sessionId}`)).json;
    const detail = `sessionSettings.tags[0].metadata: must nest objects and arrays at most ${LIMIT} levels deep (the metadata object is level 1); deeper values cannot be read by protobuf clients`;
    for (const metadata of [nested(LIMIT + 1), nested(60), { list: arrays(LIMIT) }]) {
      const res = await patch(s.sessionId, metadata);
      expect(res.status).toBe(400);
      expect(res.json).toEqual({
        title: "Bad Request",
        detail,
        status: 400,
        requestId: res.headers.get("x-request-id"),
      });
    }
    // Over gRPC, past the depth at which protobuf's default decoder limit used to fail the call
    // (INTERNAL, "parse binary: maximum recursion depth"): the handler answers.
    for (const levels of [LIMIT + 1, 60]) {
      const err = await protobufEs
        .call(
          SessionService.method.updateSession,
          { sessionId: s.sessionId, sessionSettings: { tags: { values: [tagValue(nested(levels))] } } },
          auth(),
        )
        .then(
          () => undefined,
          (e: { code: number; details: string }) => e,
        );
      expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(decodeURIComponent(err!.details)).toBe(detail);
    }
    expect((await api(server.restUrl, owner.key, `/api/v0/sessions/${s.sessionId}`)).json).toEqual(before);
  });

  it("refuses a body nested deeper than 100 levels as Envoy's JSON parser does, not as a wrong type", async () => {
    const s = await newSession();
    // The body, sessionSettings, tags, the tag and 97 levels of metadata: 101.
    for (const [metadata, detail] of [
      [nested(97), "Message too deep. Max recursion depth reached for key 'a'"],
      [{ list: arrays(96) }, "Message too deep. Max recursion depth reached in array"],
    ] as const) {
      const res = await patch(s.sessionId, metadata);
      expect(res.status).toBe(400);
      expect(res.json.detail).toBe(detail);
    }
    // 100 levels pass the edge; the service then refuses the metadata as above.
    expect((await patch(s.sessionId, nested(96))).json.detail).toMatch(
      /^sessionSettings\.tags\[0\]\.metadata: must nest/,
    );
  });
});

/** A tag {name, metadata} as the google.protobuf.Value of a ListValue item. */
function tagValue(metadata: Record<string, unknown>): object {
  return {
    kind: {
      case: "structValue",
      value: {
        fields: {
          name: { kind: { case: "stringValue", value: "deep" } },
          metadata: { kind: { case: "structValue", value: toStruct(metadata) } },
        },
      },
    },
  };
}

function toStruct(o: Record<string, unknown>): object {
  return {
    fields: Object.fromEntries(
      Object.entries(o).map(([k, v]) => [
        k,
        typeof v === "string"
          ? { kind: { case: "stringValue", value: v } }
          : { kind: { case: "structValue", value: toStruct(v as Record<string, unknown>) } },
      ]),
    ),
  };
}
