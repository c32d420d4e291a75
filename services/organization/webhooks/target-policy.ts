// Where a webhook may point. A webhook makes this service send requests to a URL a client chose,
// so the URL must not reach what only this service can reach: loopback, private networks,
// link-local addresses (cloud metadata at 169.254.169.254 among them), and the like. The URL is
// checked when the endpoint is created (after resolving its name) and the address is checked
// again on every connection (guardedLookup), since a name may resolve elsewhere later (DNS
// rebinding). WEBHOOK_ALLOW_PRIVATE_TARGETS turns both off, and allows http, for local use.
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { invalidArgument } from "../../platform/errors.js";

export const MAX_URL_CHARS = 2048;

const blocked = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8], // "this network"
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const)
  blocked.addSubnet(net, prefix, "ipv4");
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["64:ff9b::", 96], // NAT64 to any IPv4 address
  ["100::", 64],
  ["2001:db8::", 32],
  ["fc00::", 7], // unique local (fd00:ec2::254: AWS metadata)
  ["fe80::", 10],
  ["ff00::", 8],
] as const)
  blocked.addSubnet(net, prefix, "ipv6");

/** The IPv4 address an IPv4-mapped IPv6 address (::ffff:a.b.c.d, or ::ffff:xxxx:xxxx) stands for. */
function mappedIpv4(address: string): string | undefined {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (dotted !== undefined) return dotted;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex === null) return undefined;
  const [hi, lo] = [Number.parseInt(hex[1]!, 16), Number.parseInt(hex[2]!, 16)];
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
}

/** Why an address may not be a webhook's target, or undefined when it may. */
export function privateAddressReason(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return `${address} is not an IP address`;
  const mapped = family === 6 ? mappedIpv4(address) : undefined;
  if (mapped !== undefined) return privateAddressReason(mapped);
  if (blocked.check(address, family === 4 ? "ipv4" : "ipv6"))
    return `${address} is a loopback, private, link-local or reserved address`;
  return undefined;
}

/** The URL checked for its form (400s name `url`); the host is checked by resolving it. */
export function parseWebhookUrl(raw: string, allowPrivate: boolean): URL {
  if (raw === "") throw invalidArgument("url", "is required");
  if (raw.length > MAX_URL_CHARS) throw invalidArgument("url", `must be at most ${MAX_URL_CHARS} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidArgument("url", "is not an absolute URL");
  }
  const protocols = allowPrivate ? ["https:", "http:"] : ["https:"];
  if (!protocols.includes(url.protocol)) throw invalidArgument("url", `must be ${protocols.join(" or ")}`);
  if (url.username !== "" || url.password !== "")
    throw invalidArgument("url", "must not carry a user name or password");
  if (url.hash !== "") throw invalidArgument("url", "must not have a fragment");
  return url;
}

const lookupAll = (host: string) =>
  new Promise<LookupAddress[]>((resolve, reject) =>
    dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
  );

/** The host of `url`, resolved: every address it gives must be public (400 naming `url`). */
export async function checkWebhookTarget(url: URL, allowPrivate: boolean): Promise<void> {
  if (allowPrivate) return;
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookupAll(host)).map((a) => a.address);
  } catch {
    throw invalidArgument("url", `the host ${JSON.stringify(host.slice(0, 100))} does not resolve`);
  }
  for (const address of addresses) {
    const reason = privateAddressReason(address);
    if (reason !== undefined) throw invalidArgument("url", `the host resolves to ${reason}`);
  }
}

/**
 * A `lookup` for http(s).request that refuses private addresses at connection time: the address
 * the socket connects to is the one checked.
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, "", 0);
    const list = addresses as LookupAddress[];
    for (const a of list) {
      const reason = privateAddressReason(a.address);
      if (reason !== undefined) {
        const refused = Object.assign(new Error(`refused: ${hostname} resolves to ${reason}`), { code: "EPRIVATE" });
        return callback(refused, "", 0);
      }
    }
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
    const first = list[0]!;
    callback(null, first.address, first.family);
  });
};
