// Validation of the computer requests (docs/interface.md §4.4, §8). Each function returns the clean value or
// throws a 400 whose message starts with the JSON field name the client sent.
import { invalidArgument } from "../platform/errors.js";
import type { ProviderType } from "./tables.js";

export const NAME_MAX = 63;
export const REMOTE_USER_MAX = 63;
export const REPOS_MAX = 20;
export const REPO_URL_MAX = 2048;
export const HOSTNAME_MAX = 253;
export const PROVIDERS: readonly ProviderType[] = ["byom", "e2b"];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CONTROL = /[\u0000-\u001f\u007f]/;
// Schemes git can clone over. Others (file:, ext::) would reach into the sandbox or run commands.
const REPO_SCHEMES = new Set(["https:", "http:", "ssh:", "git:"]);
const RELAY_SCHEMES = new Set(["https:", "http:", "wss:", "ws:"]);

/** Length in characters (code points), as a client counts them, not UTF-16 units. */
const length = (s: string): number => [...s].length;

export function validateName(value: string, field = "name"): string {
  const n = length(value);
  if (n < 1 || n > NAME_MAX) throw invalidArgument(field, `must be 1 to ${NAME_MAX} characters, got ${n}`);
  if (CONTROL.test(value)) throw invalidArgument(field, "must not contain control characters");
  // GET /computers/name/{name} takes the name as one path segment.
  if (value.includes("/")) throw invalidArgument(field, `must not contain "/"`);
  return value;
}

export function validateRemoteUser(value: string, field = "remoteUser"): string {
  const n = length(value);
  if (n < 1 || n > REMOTE_USER_MAX)
    throw invalidArgument(field, `must be 1 to ${REMOTE_USER_MAX} characters, got ${n}`);
  // A login name: whitespace, ":" (the user/password separator of Basic auth) or control
  // characters can never name a Unix user.
  if (/[\s:]/.test(value) || CONTROL.test(value))
    throw invalidArgument(field, 'must not contain whitespace, ":" or control characters');
  return value;
}

export function validateHostId(value: string, field = "hostId"): string {
  if (!UUID.test(value)) throw invalidArgument(field, `must be a UUID, got "${value.slice(0, 64)}"`);
  return value.toLowerCase();
}

export function validateProvider(value: string | undefined): ProviderType {
  if (value === undefined || value === "") return "byom";
  if (!(PROVIDERS as readonly string[]).includes(value)) {
    throw invalidArgument("provider", `must be one of ${PROVIDERS.join(", ")}, got "${value.slice(0, 40)}"`);
  }
  return value as ProviderType;
}

function absoluteUrl(value: string, schemes: Set<string>, field: string, what: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidArgument(field, `must be an absolute URI, got "${value.slice(0, 80)}"`);
  }
  if (!schemes.has(url.protocol))
    throw invalidArgument(field, `must be ${what}, got scheme "${url.protocol.slice(0, -1).slice(0, 20)}"`);
  if (!url.hostname) throw invalidArgument(field, "must name a host");
  return value;
}

export function validateRepos(values: readonly string[]): string[] {
  if (values.length > REPOS_MAX)
    throw invalidArgument("repos", `must have at most ${REPOS_MAX} items, got ${values.length}`);
  const seen = new Map<string, number>();
  return values.map((value, i) => {
    const field = `repos[${i}]`;
    const n = length(value);
    if (n > REPO_URL_MAX) throw invalidArgument(field, `must be at most ${REPO_URL_MAX} characters, got ${n}`);
    absoluteUrl(value, REPO_SCHEMES, field, "an https, http, ssh or git URL");
    const first = seen.get(value);
    if (first !== undefined) throw invalidArgument(field, `repeats repos[${first}]`);
    seen.set(value, i);
    return value;
  });
}

export function validateHostname(value: string, field = "hostname"): string {
  if (value.length < 1 || value.length > HOSTNAME_MAX)
    throw invalidArgument(field, `must be 1 to ${HOSTNAME_MAX} characters`);
  if (/\s/.test(value) || CONTROL.test(value))
    throw invalidArgument(field, "must not contain whitespace or control characters");
  return value;
}

/** An optional relay URL: "" means the host did not send one. */
export function validateRelayUrl(value: string, field: string): string | null {
  if (value === "") return null;
  if (value.length > REPO_URL_MAX) throw invalidArgument(field, `must be at most ${REPO_URL_MAX} characters`);
  return absoluteUrl(value, RELAY_SCHEMES, field, "an http(s) or ws(s) URL");
}

export interface NewComputerInput {
  name: string;
  remoteUser: string;
  provider: ProviderType;
  hostId: string | null;
  repos: string[];
  autoInstallDeps: boolean;
}

export function validateCreate(req: {
  name: string;
  remoteUser: string;
  provider?: string;
  hostId?: string;
  repos: readonly string[];
  autoInstallDeps?: boolean;
}): NewComputerInput {
  return {
    name: validateName(req.name),
    remoteUser: validateRemoteUser(req.remoteUser),
    provider: validateProvider(req.provider),
    hostId: req.hostId === undefined ? null : validateHostId(req.hostId),
    repos: validateRepos(req.repos),
    autoInstallDeps: req.autoInstallDeps ?? false,
  };
}

export interface ComputerChanges {
  name?: string;
  hostId?: string;
  remoteUser?: string;
}

/** Only the fields present in the PATCH body; absent ones stay as they are. */
export function validateUpdate(req: { name?: string; hostId?: string; remoteUser?: string }): ComputerChanges {
  const changes: ComputerChanges = {};
  if (req.name !== undefined) changes.name = validateName(req.name);
  if (req.hostId !== undefined) changes.hostId = validateHostId(req.hostId);
  if (req.remoteUser !== undefined) changes.remoteUser = validateRemoteUser(req.remoteUser);
  return changes;
}
