// The benchmark's HTTP client (bench/raw-http.ts) against a real node:http server on port 0: it
// must frame answers exactly, or the analytics benchmark would time partial answers.
import { createServer, type Server } from "node:http";
import { createServer as createNetServer, type Server as NetServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RawHttpClient } from "../../bench/raw-http.js";

const big = Buffer.alloc(3_000_000 + 17, "x");
for (let i = 0; i < big.length; i += 997) big[i] = 48 + (i % 10);

describe("RawHttpClient", () => {
  let server: Server;
  let port: number;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/length") {
        res.writeHead(200, { "content-length": big.length, "x-kind": "length" });
        res.end(big);
      } else if (req.url === "/chunked") {
        // Chunks of several sizes, written apart so they arrive in separate reads.
        res.writeHead(201, { "content-type": "application/json" });
        let at = 0;
        const sizes = [1, 2, 65_536, 100_000, 7];
        const next = () => {
          if (at >= big.length) return res.end();
          const size = sizes[at % sizes.length]!;
          res.write(big.subarray(at, at + size));
          at += size;
          setImmediate(next);
        };
        next();
      } else if (req.url === "/empty") {
        res.writeHead(304, { etag: '"e"' });
        res.end();
      } else {
        res.writeHead(404, { "content-length": 9 });
        res.end("not found");
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it("reads Content-Length and chunked answers whole, on one connection, keeping the body only when asked", async () => {
    const client = new RawHttpClient("127.0.0.1", port);
    try {
      const kept = await client.get("/length", {}, true);
      expect(kept.status).toBe(200);
      expect(kept.headers.get("x-kind")).toBe("length");
      expect(kept.length).toBe(big.length);
      expect(kept.body!.equals(big)).toBe(true);

      const chunked = await client.get("/chunked", {}, true);
      expect(chunked.status).toBe(201);
      expect(chunked.headers.get("transfer-encoding")).toBe("chunked");
      expect(chunked.body!.equals(big)).toBe(true);

      const counted = await client.get("/chunked", {});
      expect(counted.body).toBeNull();
      expect(counted.length).toBe(big.length);

      const empty = await client.get("/empty", {});
      expect([empty.status, empty.length]).toEqual([304, 0]);
      const missing = await client.get("/nowhere", {}, true);
      expect([missing.status, missing.body!.toString()]).toEqual([404, "not found"]);
    } finally {
      client.close();
    }
  });

  it("fails a request whose connection closes before the answer ends", async () => {
    // A server that sends half of what it announces, then hangs up.
    const liar: NetServer = createNetServer((socket) => {
      socket.once("data", () => socket.end("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf!"));
    });
    await new Promise<void>((resolve) => liar.listen(0, "127.0.0.1", resolve));
    const client = new RawHttpClient("127.0.0.1", (liar.address() as { port: number }).port);
    try {
      await expect(client.get("/", {})).rejects.toThrow("the connection closed before the answer ended");
    } finally {
      client.close();
      await new Promise((resolve) => liar.close(resolve));
    }
  });
});
