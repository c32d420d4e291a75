// gRPC server reflection (services/platform/reflection.ts) on both gRPC listeners, through a
// reflection client built from @grpc/grpc-js and @grpc/proto-loader alone (support/
// reflection-client.ts): each listener lists exactly the services it serves, answers every kind
// of file request from the descriptors the services are built from, and a client built from
// nothing but those descriptors calls the API and gets real data. The public listener's
// reflection is open; the internal one's takes a service-account token, as everything there.
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { ALL_MODULES } from "../services/modules.js";
import type { KeyValueStore } from "../services/platform/kv.js";
import { createLogger } from "../services/platform/logger.js";
import { isPublic } from "../services/platform/module.js";
import { type RunningServer, startServer } from "../services/server.js";
import { createTestDatabase, type TestDatabase } from "./support/database.js";
import { bearer, createTestOrg, createTestServiceAccount, createTestUser, type TestUser } from "./support/fixtures.js";
import { createTestKv } from "./support/kv.js";
import {
  filesContainingSymbol,
  listServices,
  openReflection,
  reflect,
  reflectedClient,
  unary,
} from "./support/reflection-client.js";
import { testServerConfig } from "./support/server.js";

/** What both listeners serve besides their modules' services. */
const PLATFORM = [
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
];
const PUBLIC = [
  "agentplane.analytics.v1.AnalyticsService",
  "agentplane.analytics.v1.OtlpHttpService",
  "agentplane.computers.v1alpha1.ComputerService",
  "agentplane.organization.v1alpha1.OrganizationService",
  "agentplane.readiness.v1.ReadinessService",
  "agentplane.sessions.v1alpha1.SessionService",
  // The pages (the web module): open, public, HttpBody streams over gRPC too.
  "agentplane.web.v1.WebService",
  "opentelemetry.proto.collector.logs.v1.LogsService",
  "opentelemetry.proto.collector.metrics.v1.MetricsService",
  "opentelemetry.proto.collector.trace.v1.TraceService",
  ...PLATFORM,
].sort();
const INTERNAL = [
  "agentplane.analytics.v1.TelemetryService",
  "agentplane.computers.v1alpha1.HostService",
  "agentplane.organization.v1alpha1.CreditLimitService",
  "agentplane.readiness.v1.ReportSubmissionService",
  "agentplane.sessions.v1alpha1.SessionRunnerService",
  ...PLATFORM,
].sort();
const SESSIONS_PROTO = "agentplane/sessions/v1alpha1/sessions.proto";
/** google.api.http: the extension of MethodOptions every REST binding is written with. */
const HTTP_RULE = 72295728;
// Short, so that a reflection stream outlives it (the request deadline leaves such streams alone).
const REQUEST_TIMEOUT_MS = 400;

/** The file names in a FileDescriptorResponse, in its order. */
function fileNames(files: Buffer[]): string[] {
  return files.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name);
}

describe("gRPC server reflection", () => {
  let database: TestDatabase<Database>;
  let kv: KeyValueStore;
  let server: RunningServer;
  let owner: TestUser;
  let token: string;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    kv = await createTestKv();
    server = await startServer(
      testServerConfig({ REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) }),
      createLogger("silent"),
      { database, kv, workers: false },
    );
    const orgId = await createTestOrg(database.db, "Reflection");
    owner = await createTestUser(database.db, orgId, "owner");
    token = await createTestServiceAccount(database.db, { scopes: ["sessions.runner"] });
  });

  afterAll(async () => {
    await server?.stop();
    await kv?.close();
    await database?.drop();
  });

  it("lists exactly the public services on the public port, without a credential, in both versions", async () => {
    expect(PUBLIC.filter((name) => !PLATFORM.includes(name))).toEqual(
      ALL_MODULES.flatMap((m) => m.services.filter(isPublic).map((s) => s.service.typeName)).sort(),
    );
    expect(await listServices(server.grpcUrl)).toEqual(PUBLIC);
    expect(await listServices(server.grpcUrl, {}, "v1alpha")).toEqual(PUBLIC);
  });

  it("lists exactly the internal services on the internal port, for a service-account token", async () => {
    expect(INTERNAL.filter((name) => !PLATFORM.includes(name))).toEqual(
      ALL_MODULES.flatMap((m) => m.services.filter((s) => !isPublic(s)).map((s) => s.service.typeName)).sort(),
    );
    expect(await listServices(server.internalGrpcUrl, bearer(token))).toEqual(INTERNAL);
    expect(await listServices(server.internalGrpcUrl, bearer(token), "v1alpha")).toEqual(INTERNAL);
  });

  it("refuses the internal port's reflection without a service-account token", async () => {
    await expect(listServices(server.internalGrpcUrl)).rejects.toMatchObject({
      code: grpc.status.UNAUTHENTICATED,
      details: expect.stringContaining("service account token"),
    });
    await expect(listServices(server.internalGrpcUrl, bearer(owner.key))).rejects.toMatchObject({
      code: grpc.status.PERMISSION_DENIED,
      details: expect.stringContaining("API keys are not accepted"),
    });
    await expect(listServices(server.internalGrpcUrl, bearer("aps_not_a_token"))).rejects.toMatchObject({
      code: grpc.status.UNAUTHENTICATED,
    });
  });

  it("returns a method's file with every file it imports, and a client built from them calls the API", async () => {
    const files = await filesContainingSymbol(
      server.grpcUrl,
      "agentplane.sessions.v1alpha1.SessionService.ListSessions",
    );
    const names = fileNames(files);
    expect(names[0]).toBe(SESSIONS_PROTO);
    expect(names.sort()).toEqual(
      [
        SESSIONS_PROTO,
        "agentplane/paging/v1alpha1/paging.proto",
        "google/api/annotations.proto",
        "google/api/http.proto",
        "google/api/httpbody.proto",
        "google/protobuf/any.proto",
        "google/protobuf/descriptor.proto",
        "google/protobuf/empty.proto",
        "google/protobuf/struct.proto",
      ].sort(),
    );

    const client = await reflectedClient(server.grpcUrl, "agentplane.sessions.v1alpha1.SessionService");
    try {
      const created = await unary(client, "CreateSession", { title: "from reflection" }, bearer(owner.key));
      expect(created.session_id).toMatch(/./);
      expect(created.title).toBe("from reflection");
      const listed = await unary(client, "ListSessions", {}, bearer(owner.key));
      expect(listed.sessions.map((s: { session_id: string }) => s.session_id)).toContain(created.session_id);
      expect(listed.sessions.find((s: { session_id: string }) => s.session_id === created.session_id).title).toBe(
        "from reflection",
      );
      // The reflected client takes the API's own refusals: no key, no sessions.
      await expect(unary(client, "ListSessions", {}, {})).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
    } finally {
      client.close();
    }
  });

  it("builds a client of an internal service on the internal port, called with a service-account token", async () => {
    const client = await reflectedClient(
      server.internalGrpcUrl,
      "agentplane.sessions.v1alpha1.SessionRunnerService",
      bearer(token),
    );
    try {
      const created = await unary(
        client,
        "CreateSession",
        { org_id: owner.orgId, user_id: owner.userId, title: "from the internal port" },
        bearer(token),
      );
      expect(created.session_id).toMatch(/./);
      const claimed = await unary(client, "ClaimSession", { runner_id: "reflection-test" }, bearer(token));
      // Nothing pending in this organization: an empty claim, from the real table.
      expect(claimed.session).toBeNull();
    } finally {
      client.close();
    }
    // The public port sees it: the same data.
    const sessions = await reflectedClient(server.grpcUrl, "agentplane.sessions.v1alpha1.SessionService");
    try {
      const listed = await unary(sessions, "ListSessions", {}, bearer(owner.key));
      expect(listed.sessions.map((s: { title: string }) => s.title)).toContain("from the internal port");
    } finally {
      sessions.close();
    }
  });

  it("describes no service another listener serves, though its file is shared", async () => {
    const runner = "agentplane.sessions.v1alpha1.SessionRunnerService";
    const pub = await reflect(server.grpcUrl, { file_containing_symbol: runner });
    expect(pub.error_response).toEqual({
      error_code: grpc.status.NOT_FOUND,
      error_message: expect.stringContaining(runner),
    });
    const method = await reflect(server.grpcUrl, { file_containing_symbol: `${runner}.ClaimSession` });
    expect(method.error_response?.error_code).toBe(grpc.status.NOT_FOUND);
    const internal = await reflect(
      server.internalGrpcUrl,
      { file_containing_symbol: "agentplane.sessions.v1alpha1.SessionService" },
      bearer(token),
    );
    expect(internal.error_response?.error_code).toBe(grpc.status.NOT_FOUND);
    // The messages of a served file are found on either port.
    const message = await reflect(server.grpcUrl, {
      file_containing_symbol: "agentplane.sessions.v1alpha1.ClaimSessionRequest",
    });
    expect(fileNames(message.file_descriptor_response!.file_descriptor_proto)).toContain(SESSIONS_PROTO);
    // A file no listener serves (the test-only edge proto).
    const edgetest = await reflect(server.grpcUrl, { file_by_filename: "agentplane/edgetest/v1/edgetest.proto" });
    expect(edgetest.error_response?.error_code).toBe(grpc.status.NOT_FOUND);
  });

  it("answers every kind of request on one stream, an error_response leaving the stream open", async () => {
    const { stream, client } = openReflection(server.grpcUrl);
    try {
      const missing = await stream.ask({ host: "example", file_by_filename: "no/such.proto" });
      expect(missing).toMatchObject({
        valid_host: "example",
        original_request: { host: "example", file_by_filename: "no/such.proto" },
        error_response: { error_code: grpc.status.NOT_FOUND, error_message: expect.stringContaining("no/such.proto") },
      });

      const byName = await stream.ask({ file_by_filename: "google/api/annotations.proto" });
      expect(fileNames(byName.file_descriptor_response!.file_descriptor_proto)).toEqual([
        "google/api/annotations.proto",
        "google/api/http.proto",
        "google/protobuf/descriptor.proto",
      ]);

      // An enum value is named in its enum's scope; a field and a nested message by their path.
      for (const symbol of [
        "grpc.health.v1.HealthCheckResponse.SERVING",
        "grpc.health.v1.HealthCheckResponse.ServingStatus",
        "agentplane.sessions.v1alpha1.Session.session_id",
        "grpc.reflection.v1.ServerReflection.ServerReflectionInfo",
      ]) {
        const answer = await stream.ask({ file_containing_symbol: symbol });
        expect(answer.file_descriptor_response?.file_descriptor_proto.length, symbol).toBeGreaterThan(0);
      }

      const extension = await stream.ask({
        file_containing_extension: { containing_type: "google.protobuf.MethodOptions", extension_number: HTTP_RULE },
      });
      expect(fileNames(extension.file_descriptor_response!.file_descriptor_proto)[0]).toBe(
        "google/api/annotations.proto",
      );
      const noExtension = await stream.ask({
        file_containing_extension: { containing_type: "google.protobuf.MethodOptions", extension_number: 1 },
      });
      expect(noExtension.error_response?.error_code).toBe(grpc.status.NOT_FOUND);

      const numbers = await stream.ask({ all_extension_numbers_of_type: "google.protobuf.MethodOptions" });
      expect(numbers.all_extension_numbers_response).toEqual({
        base_type_name: "google.protobuf.MethodOptions",
        extension_number: [HTTP_RULE],
      });
      const none = await stream.ask({ all_extension_numbers_of_type: "agentplane.sessions.v1alpha1.Session" });
      expect(none.all_extension_numbers_response?.extension_number).toEqual([]);
      const unknownType = await stream.ask({ all_extension_numbers_of_type: "no.Such" });
      expect(unknownType.error_response?.error_code).toBe(grpc.status.NOT_FOUND);

      const empty = await stream.ask({ host: "x" });
      expect(empty.error_response).toEqual({
        error_code: grpc.status.INVALID_ARGUMENT,
        error_message: expect.stringContaining("message_request"),
      });

      expect((await stream.ask({ list_services: "" })).list_services_response?.service.map((s) => s.name)).toEqual(
        PUBLIC,
      );
      expect(await stream.end()).toMatchObject({ code: grpc.status.OK });
    } finally {
      client.close();
    }
  });

  it("keeps a stream open past the request deadline: a reflection client asks at its own pace", async () => {
    const { stream, client } = openReflection(server.internalGrpcUrl, bearer(token), "v1alpha");
    try {
      expect((await stream.ask({ list_services: "" })).list_services_response?.service.length).toBe(INTERNAL.length);
      await new Promise((r) => setTimeout(r, REQUEST_TIMEOUT_MS * 3));
      const later = await stream.ask({ file_containing_symbol: "agentplane.sessions.v1alpha1.SessionRunnerService" });
      expect(fileNames(later.file_descriptor_response!.file_descriptor_proto)[0]).toBe(SESSIONS_PROTO);
      expect(await stream.end()).toMatchObject({ code: grpc.status.OK });
    } finally {
      client.close();
    }
  });

  it("is no REST route", async () => {
    for (const path of [
      "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
    ]) {
      for (const method of ["GET", "POST"]) {
        const res = await fetch(`${server.restUrl}${path}`, {
          method,
          headers: { "content-type": "application/json" },
          body: method === "POST" ? "{}" : undefined,
        });
        expect(res.status, `${method} ${path}`).toBe(404);
      }
    }
  });
});

describe("a stop with a reflection stream open", () => {
  it("cuts the stream instead of waiting for it, well within the drain timeout", async () => {
    const database = await createTestDatabase<Database>(migrations);
    const kv = await createTestKv();
    const server = await startServer(testServerConfig(), createLogger("silent"), { database, kv, workers: false });
    const { stream, client } = openReflection(server.grpcUrl);
    try {
      expect((await stream.ask({ list_services: "" })).list_services_response?.service.length).toBe(PUBLIC.length);
      const started = performance.now();
      await server.stop();
      expect(performance.now() - started).toBeLessThan(5_000);
      // The client learns that the stream is over: an error, not an answer that never comes.
      await expect(stream.ask({ list_services: "" })).rejects.toMatchObject({ code: expect.any(Number) });
    } finally {
      client.close();
      await server.stop();
      await kv.close();
      await database.drop();
    }
  });
});
