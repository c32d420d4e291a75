// SIGTERM drains: a request already in flight when the signal arrives still gets its answer,
// new connections are refused, and the process exits 0.
import { spawn } from "node:child_process";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { createTestDatabase, type TestDatabase } from "./support/database.js";
import { createTestOrg, createTestUser } from "./support/fixtures.js";

describe("SIGTERM", () => {
  let database: TestDatabase<Database>;
  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
  });
  afterAll(() => database?.drop());

  it("finishes the in-flight request, then exits 0", async () => {
    const owner = await createTestUser(database.db, await createTestOrg(database.db), "owner");
    const child = spawn(process.execPath, ["bin/agentplane.js", "serve"], {
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        PORT: "0",
        GRPC_PORT: "0",
        INTERNAL_GRPC_PORT: "0",
        LOG_LEVEL: "info",
        SEED_DEMO: "false",
        REDIS_URL: process.env.TEST_REDIS_URL ?? "",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    // The start banner on stdout names the REST edge URL.
    const restUrl = await new Promise<string>((resolve, reject) => {
      let buffered = "";
      const timer = setTimeout(() => reject(new Error(`server did not start: ${buffered}`)), 60_000);
      child.stdout.on("data", (chunk: Buffer) => {
        buffered += chunk.toString();
        const match = /REST edge: (http:\/\/\S+)/.exec(buffered);
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
    });

    // Start a PUT whose body is only half sent, so the request is in flight during SIGTERM.
    const url = new URL("/api/v0/organization/usage/limits/users", restUrl);
    const body = JSON.stringify({ users: [{ email: owner.email, limit: 5 }] });
    const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(
        url,
        {
          method: "PUT",
          headers: {
            authorization: `Bearer ${owner.key}`,
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
          },
        },
        (res) => {
          let text = "";
          res.on("data", (c: Buffer) => (text += c.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on("error", reject);
      req.write(body.slice(0, 10));
      setTimeout(() => {
        child.kill("SIGTERM");
        setTimeout(() => req.end(body.slice(10)), 500);
      }, 200);
    });

    const res = await answer;
    // The RPC ran to completion after SIGTERM: the limit was stored, not the connection reset.
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toEqual({ updated: [{ email: owner.email, limit: 5 }], errors: [] });
    expect(await exited).toBe(0);
  }, 90_000);
});
