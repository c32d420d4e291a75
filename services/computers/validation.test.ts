import { describe, expect, it } from "vitest";
import { invalidArgumentMessage as problem } from "../../test/support/domain-errors.js";
import {
  validateCreate,
  validateHostId,
  validateName,
  validateRelayUrl,
  validateRemoteUser,
  validateRepos,
  validateUpdate,
} from "./validation.js";

const base = { name: "dev", remoteUser: "ada", repos: [] as string[] };

describe("computer validation", () => {
  it("accepts names and remote users of 1 to 63 characters, counted as characters", () => {
    expect(validateName("a")).toBe("a");
    expect(validateName("x".repeat(63))).toHaveLength(63);
    // 63 emoji are 126 UTF-16 units but 63 characters.
    expect(validateName("🚀".repeat(63))).toBe("🚀".repeat(63));
    expect(validateRemoteUser("u".repeat(63))).toHaveLength(63);
  });

  it("rejects bad names and remote users, naming the field", () => {
    expect(problem(() => validateName(""))).toBe("name: must be 1 to 63 characters, got 0");
    expect(problem(() => validateName("x".repeat(64)))).toBe("name: must be 1 to 63 characters, got 64");
    expect(problem(() => validateName("a/b"))).toMatch(/^name: must not contain "\/"/);
    expect(problem(() => validateName("a\nb"))).toMatch(/^name: must not contain control characters/);
    expect(problem(() => validateRemoteUser(""))).toMatch(/^remoteUser: must be 1 to 63/);
    expect(problem(() => validateRemoteUser("u".repeat(64)))).toMatch(
      /^remoteUser: must be 1 to 63 characters, got 64/,
    );
    expect(problem(() => validateRemoteUser("ada lovelace"))).toMatch(/^remoteUser: must not contain whitespace/);
    expect(problem(() => validateRemoteUser("ada:x"))).toMatch(/^remoteUser: /);
  });

  it("takes any UUID as hostId, lower-cased, and nothing else", () => {
    expect(validateHostId("3F2504E0-4F89-11D3-9A0C-0305E82C3301")).toBe("3f2504e0-4f89-11d3-9a0c-0305e82c3301");
    expect(problem(() => validateHostId("not-a-uuid"))).toBe('hostId: must be a UUID, got "not-a-uuid"');
    expect(problem(() => validateHostId("3f2504e0-4f89-11d3-9a0c-0305e82c330"))).toMatch(/^hostId: must be a UUID/);
    expect(problem(() => validateHostId(""))).toMatch(/^hostId: must be a UUID/);
  });

  it("checks repos: at most 20, each an https/http/ssh/git URL of at most 2048 characters, each once", () => {
    const ok = Array.from({ length: 20 }, (_, i) => `https://github.com/acme/r${i}.git`);
    expect(validateRepos(ok)).toEqual(ok);
    expect(validateRepos(["ssh://git@github.com/acme/api.git", "git://example.org/x"])).toHaveLength(2);
    expect(problem(() => validateRepos([...ok, "https://github.com/acme/r20"]))).toBe(
      "repos: must have at most 20 items, got 21",
    );
    const long = `https://github.com/${"a".repeat(2048 - "https://github.com/".length)}`;
    expect(validateRepos([long])).toEqual([long]);
    expect(problem(() => validateRepos([`${long}b`]))).toBe("repos[0]: must be at most 2048 characters, got 2049");
    expect(problem(() => validateRepos(["https://x.org/a", "not a uri"]))).toMatch(
      /^repos\[1\]: must be an absolute URI/,
    );
    expect(problem(() => validateRepos(["file:///etc"]))).toMatch(
      /^repos\[0\]: must be an https, http, ssh or git URL, got scheme "file"/,
    );
    expect(problem(() => validateRepos(["ext::sh -c touch% /tmp/x"]))).toMatch(/^repos\[0\]: /);
    expect(problem(() => validateRepos(["https://x.org/a", "https://x.org/a"]))).toBe("repos[1]: repeats repos[0]");
  });

  it("defaults provider to byom and rejects unknown providers", () => {
    expect(validateCreate(base)).toEqual({
      name: "dev",
      remoteUser: "ada",
      provider: "byom",
      hostId: null,
      repos: [],
      autoInstallDeps: false,
    });
    expect(validateCreate({ ...base, provider: "e2b", autoInstallDeps: true }).provider).toBe("e2b");
    expect(problem(() => validateCreate({ ...base, provider: "aws" }))).toBe(
      'provider: must be one of byom, e2b, got "aws"',
    );
  });

  it("keeps only the fields present in an update", () => {
    expect(validateUpdate({})).toEqual({});
    expect(validateUpdate({ name: "new" })).toEqual({ name: "new" });
    expect(problem(() => validateUpdate({ hostId: "x" }))).toMatch(/^hostId: /);
  });

  it("treats an empty relay URL as none and checks the others", () => {
    expect(validateRelayUrl("", "relayClientUrl")).toBeNull();
    expect(validateRelayUrl("wss://relay.example.com/c/1", "relayClientUrl")).toBe("wss://relay.example.com/c/1");
    expect(problem(() => validateRelayUrl("ftp://x.org", "relayAgentUrl"))).toMatch(/^relayAgentUrl: /);
  });
});
