import { describe, expect, it } from "vitest";
import { normalizeRepoUrl, withoutCredentials } from "./repo-url.js";

describe("normalizeRepoUrl", () => {
  it("gives every spelling of one repository the same URL", () => {
    const spellings = [
      "https://github.com/Acme/Widgets",
      "https://github.com/Acme/Widgets.git",
      "https://github.com/Acme/Widgets/",
      "https://github.com/Acme/Widgets.git/",
      "HTTPS://GitHub.COM/Acme/Widgets",
      "https://x-access-token:ghp_secret@github.com/Acme/Widgets.git",
      "https://ghp_token@github.com/Acme/Widgets",
      "git@github.com:Acme/Widgets.git",
      "git@GitHub.com:Acme/Widgets",
      "ssh://git@github.com/Acme/Widgets.git",
      "ssh://git@github.com:22/Acme/Widgets",
      "git://github.com/Acme/Widgets.git",
      "https://github.com/Acme/Widgets?tab=readme#top",
      "  https://github.com/Acme/Widgets  ",
    ];
    for (const s of spellings) expect(normalizeRepoUrl(s), s).toBe("https://github.com/Acme/Widgets");
  });

  it("keeps the path's case, a non-default port and nested groups", () => {
    expect(normalizeRepoUrl("https://github.com/acme/widgets")).not.toBe(
      normalizeRepoUrl("https://github.com/Acme/Widgets"),
    );
    expect(normalizeRepoUrl("https://git.example.com:8443/team/sub/repo.git")).toBe(
      "https://git.example.com:8443/team/sub/repo",
    );
    expect(normalizeRepoUrl("https://github.com:443/a/b")).toBe("https://github.com/a/b");
    expect(normalizeRepoUrl("http://gitea.local/a/b")).toBe("http://gitea.local/a/b");
    expect(normalizeRepoUrl("gitlab.com:group/sub/project.git")).toBe("https://gitlab.com/group/sub/project");
  });

  it("refuses what is not a remote repository URL", () => {
    for (const s of [
      "",
      "   ",
      "not a url",
      "https://github.com",
      "https://github.com/",
      "https://github.com/.git",
      "file:///home/me/repo",
      "/home/me/repo",
      "C:\\repo",
      "ftp://example.com/repo",
      "https://exa mple.com/a",
    ]) {
      expect(normalizeRepoUrl(s), s).toBeUndefined();
    }
  });
});

describe("withoutCredentials", () => {
  it("removes credentials and leaves everything else as typed", () => {
    expect(withoutCredentials("https://user:pass@github.com/Acme/W.git")).toBe("https://github.com/Acme/W.git");
    expect(withoutCredentials("https://ghp_token@GitHub.com/Acme/W")).toBe("https://GitHub.com/Acme/W");
    expect(withoutCredentials("ssh://git:secret@host/a/b")).toBe("ssh://git@host/a/b");
    expect(withoutCredentials("git@github.com:Acme/W.git")).toBe("git@github.com:Acme/W.git");
    expect(withoutCredentials("https://github.com/Acme/W.git")).toBe("https://github.com/Acme/W.git");
  });
});
