import { describe, expect, it } from "vitest";
import { planSteps, repoDirectories, repoDirectoryName } from "./steps.js";

describe("provisioning plan", () => {
  it("has one host-registration step for byom", () => {
    expect(planSteps("byom", ["https://github.com/acme/web"], true)).toEqual([
      { position: 0, kind: "register_host", name: "Wait for the host to register", repoUrl: null, repoDir: null },
    ]);
  });

  it("creates the sandbox, clones every repo, then installs each when asked", () => {
    const repos = ["https://github.com/acme/web.git", "ssh://git@github.com/acme/api"];
    expect(planSteps("e2b", repos, false).map((s) => [s.position, s.kind, s.name])).toEqual([
      [0, "create_sandbox", "Create the E2B sandbox"],
      [1, "clone_repo", "Clone https://github.com/acme/web.git"],
      [2, "clone_repo", "Clone ssh://git@github.com/acme/api"],
    ]);
    const withInstall = planSteps("e2b", repos, true);
    expect(withInstall.map((s) => [s.kind, s.repoDir])).toEqual([
      ["create_sandbox", null],
      ["clone_repo", "web"],
      ["clone_repo", "api"],
      ["install_deps", "web"],
      ["install_deps", "api"],
    ]);
    expect(planSteps("e2b", [], true).map((s) => s.kind)).toEqual(["create_sandbox"]);
  });

  it("derives safe, distinct directory names from repository URLs", () => {
    expect(repoDirectoryName("https://github.com/acme/web.git")).toBe("web");
    expect(repoDirectoryName("https://github.com/acme/my%20app/")).toBe("my-app");
    expect(repoDirectoryName("https://example.org/")).toBe("repo");
    expect(repoDirectoryName("https://example.org/..")).toBe("repo");
    expect(repoDirectoryName("https://example.org/$(rm -rf ~)")).not.toMatch(/[$() ~]/);
    expect(
      repoDirectories(["https://github.com/a/app", "https://github.com/b/app.git", "https://gitlab.com/c/app"]),
    ).toEqual(["app", "app-2", "app-3"]);
  });
});
