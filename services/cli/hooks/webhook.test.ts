import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { Notice } from "./deliver.js";
import { signBody, verifySignature, SIGNATURE_HEADER, TIMESTAMP_HEADER } from "./signature.js";
import { webhookPayload, webhookTarget } from "./webhook.js";

interface Received {
  headers: IncomingMessage["headers"];
  body: string;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function receiver(
  answer: (req: IncomingMessage, body: string) => number | "hang",
): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      received.push({ headers: req.headers, body });
      const status = answer(req, body);
      if (status !== "hang") res.writeHead(status).end();
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
}

const notice: Notice = {
  text: "Session ended: error in api",
  input: { event: "SessionEnd", sessionId: "s-1", cwd: "/w/api", reason: "error" },
  at: new Date("2026-03-01T10:00:00.000Z"),
};

describe("webhook target", () => {
  it("POSTs a Slack-compatible JSON message with the event's details, signed with the secret", async () => {
    const { url, received } = await receiver(() => 204);
    await webhookTarget({ url, secret: "shh" }).send(notice, new AbortController().signal);
    expect(received).toHaveLength(1);
    const [{ headers, body }] = received as [Received];
    expect(headers["content-type"]).toBe("application/json");
    expect(JSON.parse(body)).toEqual({
      text: "Session ended: error in api",
      agentplane: {
        event: "SessionEnd",
        session_id: "s-1",
        cwd: "/w/api",
        reason: "error",
        time: "2026-03-01T10:00:00.000Z",
      },
    });
    const timestamp = headers[TIMESTAMP_HEADER.toLowerCase()] as string;
    const signature = headers[SIGNATURE_HEADER.toLowerCase()] as string;
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(5);
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(verifySignature("shh", { timestamp, signature }, body)).toBe(true);
    expect(verifySignature("other", { timestamp, signature }, body)).toBe(false);
    expect(verifySignature("shh", { timestamp, signature }, body.replace("error", "other"))).toBe(false);
  });

  it("sends no signature headers without a secret", async () => {
    const { url, received } = await receiver(() => 200);
    await webhookTarget({ url }).send(notice, new AbortController().signal);
    expect(received[0]?.headers[SIGNATURE_HEADER.toLowerCase()]).toBeUndefined();
    expect(received[0]?.headers[TIMESTAMP_HEADER.toLowerCase()]).toBeUndefined();
  });

  it("fails on a non-2xx answer and when its signal fires on a receiver that never answers", async () => {
    const failing = await receiver(() => 500);
    await expect(webhookTarget({ url: failing.url }).send(notice, new AbortController().signal)).rejects.toThrow(
      "webhook answered HTTP 500",
    );
    const hanging = await receiver(() => "hang");
    const started = Date.now();
    await expect(webhookTarget({ url: hanging.url }).send(notice, AbortSignal.timeout(150))).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("leaves out the fields an event does not have", () => {
    expect(webhookPayload({ text: "Task finished", input: { event: "Stop" }, at: notice.at })).toEqual({
      text: "Task finished",
      agentplane: { event: "Stop", time: "2026-03-01T10:00:00.000Z" },
    });
  });
});

describe("signature", () => {
  it("is the hex HMAC-SHA256 of timestamp, a dot and the body, and expires", () => {
    // Known answer: HMAC-SHA256("key", "1700000000.{}") computed independently (openssl dgst -sha256 -hmac key).
    expect(signBody("key", "1700000000", "{}")).toBe(
      "sha256=9d713ed406bb7076d4123f0dc2c39d2df5c654ed4b0cd56b52c8b4c940bd63ae",
    );
    const sig = signBody("key", "1700000000", "{}");
    expect(verifySignature("key", { timestamp: "1700000000", signature: sig }, "{}", 1700000100)).toBe(true);
    expect(verifySignature("key", { timestamp: "1700000000", signature: sig }, "{}", 1700000301)).toBe(false);
    expect(verifySignature("key", { timestamp: undefined, signature: sig }, "{}", 1700000000)).toBe(false);
  });
});
