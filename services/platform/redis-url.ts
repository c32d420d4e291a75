/**
 * REDIS_URL's three forms, parsed once at start (config.ts validates with it, kv-redis.ts builds
 * the client from it):
 *
 * - `redis://[[user]:password@]host[:port][/db]` and `rediss://…` (TLS): one server, as ioredis reads it.
 * - `redis+sentinel://[[user]:password@]host[:port][,host[:port]…]/<master name>[?sentinelPassword=…]`:
 *   the master that the listed Sentinels (default port 26379) name; ioredis asks them again after a
 *   failover. The URL's credentials are the Redis servers'; `sentinelPassword` (and
 *   `sentinelUsername`) are the Sentinels' own when they require one.
 * - `redis+cluster://[[user]:password@]host[:port][,host[:port]…]`: Redis Cluster, the listed nodes
 *   (default port 6379) being seeds from which ioredis learns the slot map.
 *
 * `rediss+sentinel://` and `rediss+cluster://` ask for TLS to the Redis servers.
 */

export class RedisUrlError extends Error {
  constructor(problem: string) {
    super(problem);
    this.name = "RedisUrlError";
  }
}

export interface RedisHostPort {
  readonly host: string;
  readonly port: number;
}

interface Credentials {
  readonly username: string | undefined;
  readonly password: string | undefined;
  readonly tls: boolean;
}

export type RedisTarget =
  | { readonly kind: "standalone"; readonly url: string }
  | (Credentials & {
      readonly kind: "sentinel";
      readonly sentinels: readonly RedisHostPort[];
      readonly name: string;
      readonly sentinelUsername: string | undefined;
      readonly sentinelPassword: string | undefined;
    })
  | (Credentials & { readonly kind: "cluster"; readonly nodes: readonly RedisHostPort[] });

const SCHEMES = ["redis:", "rediss:", "redis+sentinel:", "rediss+sentinel:", "redis+cluster:", "rediss+cluster:"];

/** Throws RedisUrlError, whose message completes "REDIS_URL …". */
export function parseRedisUrl(raw: string): RedisTarget {
  const scheme = /^([a-z][a-z0-9+.-]*:)\/\//i.exec(raw)?.[1]?.toLowerCase();
  if (scheme === undefined) throw new RedisUrlError("is not a valid URL");
  if (!SCHEMES.includes(scheme)) throw new RedisUrlError(`must use ${SCHEMES.join(" or ")}, got ${scheme}`);
  if (scheme === "redis:" || scheme === "rediss:") {
    try {
      new URL(raw);
    } catch {
      throw new RedisUrlError("is not a valid URL");
    }
    return { kind: "standalone", url: raw };
  }
  const tls = scheme.startsWith("rediss");
  const sentinel = scheme.endsWith("+sentinel:");
  const rest = raw.slice(scheme.length + 2);
  const pathAt = rest.search(/[/?#]/);
  const authority = pathAt === -1 ? rest : rest.slice(0, pathAt);
  const tail = pathAt === -1 ? "" : rest.slice(pathAt);
  const at = authority.lastIndexOf("@");
  const userinfo = at === -1 ? undefined : authority.slice(0, at);
  const hostList = at === -1 ? authority : authority.slice(at + 1);
  const { username, password } = credentialsOf(userinfo);
  const hosts = hostList.split(",").map((h) => hostPort(h, sentinel ? 26379 : 6379));
  if (hosts.length === 0) throw new RedisUrlError("names no host");
  // The path and query: parsed against a placeholder host, the list being parsed above.
  let tailUrl: URL;
  try {
    tailUrl = new URL(`http://placeholder${tail}`);
  } catch {
    throw new RedisUrlError("is not a valid URL");
  }
  if (tailUrl.hash !== "") throw new RedisUrlError("must not have a #fragment");
  const path = decodeURIComponent(tailUrl.pathname.replace(/^\//, ""));
  const query = tailUrl.searchParams;
  if (sentinel) {
    for (const key of query.keys())
      if (key !== "sentinelPassword" && key !== "sentinelUsername")
        throw new RedisUrlError(
          `has an unknown parameter "${key.slice(0, 40)}" (known: sentinelPassword, sentinelUsername)`,
        );
    if (path === "" || path.includes("/"))
      throw new RedisUrlError(
        "must name the Sentinel master as its path: redis+sentinel://host:26379,host:26379/mymaster",
      );
    return {
      kind: "sentinel",
      sentinels: hosts,
      name: path,
      username,
      password,
      tls,
      sentinelUsername: query.get("sentinelUsername") ?? undefined,
      sentinelPassword: query.get("sentinelPassword") ?? undefined,
    };
  }
  if (path !== "") throw new RedisUrlError("must have no path for Redis Cluster (a cluster has one database, 0)");
  for (const key of query.keys()) throw new RedisUrlError(`has an unknown parameter "${key.slice(0, 40)}"`);
  return { kind: "cluster", nodes: hosts, username, password, tls };
}

function credentialsOf(userinfo: string | undefined): { username: string | undefined; password: string | undefined } {
  if (userinfo === undefined) return { username: undefined, password: undefined };
  const colon = userinfo.indexOf(":");
  const decode = (text: string) => {
    try {
      return decodeURIComponent(text);
    } catch {
      throw new RedisUrlError("has badly escaped credentials");
    }
  };
  const user = decode(colon === -1 ? userinfo : userinfo.slice(0, colon));
  const password = colon === -1 ? undefined : decode(userinfo.slice(colon + 1));
  return { username: user === "" ? undefined : user, password: password === "" ? undefined : password };
}

function hostPort(text: string, defaultPort: number): RedisHostPort {
  // host, host:port, [v6], [v6]:port
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i.exec(text);
  if (!match) throw new RedisUrlError(`has an invalid host "${text.slice(0, 60)}" (host:port, comma separated)`);
  const port = match[2] === undefined ? defaultPort : Number(match[2]);
  if (port < 1 || port > 65535) throw new RedisUrlError(`has an invalid port ${port} (1-65535)`);
  return { host: match[1]!.replace(/^\[|\]$/g, ""), port };
}
