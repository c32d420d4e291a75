import { describe, expect, it } from "vitest";
import { parseRedisUrl } from "./redis-url.js";

describe("parseRedisUrl", () => {
  it("leaves a one-server URL to ioredis", () => {
    expect(parseRedisUrl("redis://:pw@cache:6379/1")).toEqual({ kind: "standalone", url: "redis://:pw@cache:6379/1" });
  });
  it("reads Sentinels (default port 26379), the master's name and both sets of credentials", () => {
    expect(
      parseRedisUrl("redis+sentinel://app:p%40ss@s1,s2:26380,[fd00::1]:26381/my-master?sentinelPassword=sp"),
    ).toEqual({
      kind: "sentinel",
      sentinels: [
        { host: "s1", port: 26379 },
        { host: "s2", port: 26380 },
        { host: "fd00::1", port: 26381 },
      ],
      name: "my-master",
      username: "app",
      password: "p@ss",
      tls: false,
      sentinelUsername: undefined,
      sentinelPassword: "sp",
    });
  });
  it("reads Cluster seed nodes (default port 6379) and TLS", () => {
    expect(parseRedisUrl("rediss+cluster://:pw@n1:7000,n2")).toEqual({
      kind: "cluster",
      nodes: [
        { host: "n1", port: 7000 },
        { host: "n2", port: 6379 },
      ],
      username: undefined,
      password: "pw",
      tls: true,
    });
  });
});
