import { describe, expect, it } from "vitest";
import { loadConfig } from "../config.js";
import { defaultRequestMemoryBytes } from "./request-memory.js";

describe("WORKERS", () => {
  it("defaults to running the workers; true and false are the only values", () => {
    expect(loadConfig({}).workers).toBe(true);
    expect(loadConfig({ WORKERS: "" }).workers).toBe(true);
    expect(loadConfig({ WORKERS: "true" }).workers).toBe(true);
    expect(loadConfig({ WORKERS: "false" }).workers).toBe(false);
    for (const bad of ["0", "no", "FALSE", "off"])
      expect(() => loadConfig({ WORKERS: bad }), bad).toThrow(
        `invalid configuration: WORKERS must be true or false, got "${bad}"`,
      );
  });
});

describe("EDGE_MAX_CONNECTIONS", () => {
  it("defaults to 1024 and must be a whole number from 1 to 1 000 000", () => {
    expect(loadConfig({}).edgeMaxConnections).toBe(1024);
    expect(loadConfig({ EDGE_MAX_CONNECTIONS: "" }).edgeMaxConnections).toBe(1024);
    expect(loadConfig({ EDGE_MAX_CONNECTIONS: "20" }).edgeMaxConnections).toBe(20);
    for (const bad of ["0", "-1", "1.5", "many", "1000001", "1e3"]) {
      expect(() => loadConfig({ EDGE_MAX_CONNECTIONS: bad }), bad).toThrow(
        `invalid configuration: EDGE_MAX_CONNECTIONS must be a whole number from 1 to 1000000, got "${bad}"`,
      );
    }
  });
});

describe("REQUEST_MEMORY_BYTES", () => {
  it("defaults to a quarter of V8's heap limit and must be a whole number of bytes, a megabyte at least", () => {
    expect(loadConfig({}).requestMemoryBytes).toBe(defaultRequestMemoryBytes());
    expect(loadConfig({ REQUEST_MEMORY_BYTES: "" }).requestMemoryBytes).toBe(defaultRequestMemoryBytes());
    expect(loadConfig({ REQUEST_MEMORY_BYTES: "268435456" }).requestMemoryBytes).toBe(268435456);
    expect(loadConfig({ REQUEST_MEMORY_BYTES: "1048576" }).requestMemoryBytes).toBe(1048576);
    for (const bad of ["0", "1048575", "-1", "1.5", "256Mi", "1e9", "99999999999999999999"]) {
      expect(() => loadConfig({ REQUEST_MEMORY_BYTES: bad }), bad).toThrow(
        `invalid configuration: REQUEST_MEMORY_BYTES must be a whole number of bytes, at least 1048576, got "${bad}"`,
      );
    }
  });
});

describe("DATABASE_READ_URL", () => {
  const primary = "postgres://app@db-primary:5432/agentplane";
  it("is optional; a postgres URL beside DATABASE_URL", () => {
    expect(loadConfig({}).databaseReadUrl).toBeUndefined();
    expect(loadConfig({ DATABASE_URL: primary, DATABASE_READ_URL: "" }).databaseReadUrl).toBeUndefined();
    const replica = "postgresql://app@db-replica:5432/agentplane";
    expect(loadConfig({ DATABASE_URL: primary, DATABASE_READ_URL: replica }).databaseReadUrl).toBe(replica);
  });
  it("a bad URL, or one without DATABASE_URL, stops the start naming the variable", () => {
    expect(() => loadConfig({ DATABASE_URL: primary, DATABASE_READ_URL: "db-replica:5432" })).toThrow(
      "invalid configuration: DATABASE_READ_URL must use postgres: or postgresql:, got db-replica:",
    );
    expect(() => loadConfig({ DATABASE_URL: primary, DATABASE_READ_URL: "not a url" })).toThrow(
      "invalid configuration: DATABASE_READ_URL is not a valid URL",
    );
    expect(() => loadConfig({ DATABASE_READ_URL: "postgres://app@db-replica/agentplane" })).toThrow(
      "invalid configuration: DATABASE_READ_URL is set but DATABASE_URL is not",
    );
  });
});

describe("REDIS_URL", () => {
  it("takes one server, Sentinel and Cluster URLs", () => {
    for (const url of [
      "redis://127.0.0.1:6379",
      "rediss://:secret@cache.example:6380/2",
      "redis+sentinel://s1:26379,s2:26379,s3/mymaster",
      "redis+sentinel://:secret@s1/mymaster?sentinelPassword=other",
      "redis+cluster://n1:7000,n2:7001,[::1]:7002",
      "rediss+cluster://user:secret@n1:7000",
    ])
      expect(loadConfig({ REDIS_URL: url }).redisUrl, url).toBe(url);
  });
  it("a bad one stops the start naming the variable and the problem", () => {
    const cases: Array<[string, string]> = [
      ["http://cache:6379", "must use redis: or rediss: or redis+sentinel: or rediss+sentinel: or redis+cluster: or"],
      ["cache:6379", "is not a valid URL"],
      ["redis+sentinel://s1:26379,s2:26379", "must name the Sentinel master as its path"],
      ["redis+sentinel://s1:26379/mymaster?db=2", 'has an unknown parameter "db"'],
      ["redis+cluster://n1:7000,n2:7001/0", "must have no path for Redis Cluster"],
      ["redis+cluster://n1:7000,,n2", 'has an invalid host ""'],
      ["redis+cluster://n1:99999", "has an invalid port 99999"],
    ];
    for (const [url, problem] of cases)
      expect(() => loadConfig({ REDIS_URL: url }), url).toThrow(`invalid configuration: REDIS_URL ${problem}`);
  });
});

describe("CORS_ALLOWED_ORIGINS", () => {
  it("defaults to none and takes a comma list of origins written as browsers send them", () => {
    expect(loadConfig({}).corsAllowedOrigins).toEqual([]);
    expect(loadConfig({ CORS_ALLOWED_ORIGINS: " " }).corsAllowedOrigins).toEqual([]);
    expect(
      loadConfig({ CORS_ALLOWED_ORIGINS: "https://app.example.com, http://localhost:5173,https://app.example.com" })
        .corsAllowedOrigins,
    ).toEqual(["https://app.example.com", "http://localhost:5173"]);
    const bad: [string, string][] = [
      ["*", 'names "*", which is not an http(s) origin'],
      ["app.example.com", 'names "app.example.com", which is not an http(s) origin'],
      ["ftp://files.example.com", 'names "ftp://files.example.com", which is not an http(s) origin'],
      [
        "https://app.example.com/",
        'names "https://app.example.com/": write the origin as browsers send it, "https://app.example.com"',
      ],
      [
        "https://App.example.com",
        'names "https://App.example.com": write the origin as browsers send it, "https://app.example.com"',
      ],
      [
        "https://app.example.com:443",
        'names "https://app.example.com:443": write the origin as browsers send it, "https://app.example.com"',
      ],
    ];
    for (const [value, problem] of bad)
      expect(() => loadConfig({ CORS_ALLOWED_ORIGINS: value }), value).toThrow(
        `invalid configuration: CORS_ALLOWED_ORIGINS ${problem}`,
      );
  });
});
