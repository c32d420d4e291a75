// Repository URLs. A report names its repository by URL, and the same repository is written many
// ways (https or scp-style ssh, with or without ".git", with a token in it); normalizing gives
// one repository record per repository per organization.

// URL schemes accepted. ssh and git transports name the same repository as its https address.
const WEB_SCHEMES = new Set(["http:", "https:"]);
const TO_HTTPS_SCHEMES = new Set(["ssh:", "git+ssh:", "ssh+git:", "git:"]);

// scp-like syntax: [user@]host:path, where path does not start with "//" (that would be a URL).
const SCP_LIKE = /^(?:([^@/\s:]+)@)?([^@/\s:]+):(?!\/\/)(\S+)$/;

function cleanPath(path: string): string | undefined {
  let p = path.startsWith("/") ? path : `/${path}`;
  p = p
    .replace(/\/+$/, "")
    .replace(/\.git$/i, "")
    .replace(/\/+$/, "");
  return p === "" ? undefined : p;
}

/**
 * The normalized form of a repository URL, or undefined when `raw` is not a remote repository
 * URL. Rules: scheme and host lower-case; credentials, port of ssh URLs, query and fragment
 * dropped; trailing "/" and ".git" dropped; scp-style `git@host:owner/repo` and
 * ssh:// / git:// URLs become `https://host/owner/repo`. The path keeps its case (hosts differ
 * on whether it matters).
 */
export function normalizeRepoUrl(raw: string): string | undefined {
  const text = raw.trim();
  if (text === "" || /\s/.test(text)) return undefined;

  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    const scp = SCP_LIKE.exec(text);
    if (!scp) return undefined;
    const [, user, host, path] = scp;
    // Without a user part, "host:path" is only taken for a dotted host name, so that a Windows
    // path such as "C:\\repo" is not mistaken for one.
    if (!user && !host!.includes(".")) return undefined;
    const cleaned = cleanPath(path!);
    return cleaned === undefined ? undefined : `https://${host!.toLowerCase()}${cleaned}`;
  }

  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  const scheme = url.protocol.toLowerCase();
  if (!url.hostname) return undefined;
  let base: string;
  if (WEB_SCHEMES.has(scheme)) base = `${scheme}//${url.host.toLowerCase()}`;
  else if (TO_HTTPS_SCHEMES.has(scheme)) base = `https://${url.hostname.toLowerCase()}`;
  else return undefined;
  const cleaned = cleanPath(url.pathname);
  return cleaned === undefined ? undefined : base + cleaned;
}

/**
 * The submitted URL as typed, but without secrets: an http(s) URL loses its whole user-info part
 * (tokens are often sent as the user name), any other URL loses the password.
 */
export function withoutCredentials(raw: string): string {
  const trimmed = raw.trim();
  const web = /^(https?:\/\/)[^@/?#]*@/i;
  if (web.test(trimmed)) return trimmed.replace(web, "$1");
  return trimmed.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/?#]*):[^@/?#]*@/i, "$1@");
}
