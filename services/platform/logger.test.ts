// The server's buffered logger, in a child process (it writes to a real file descriptor): every
// line arrives, in order, whether the process exits at once or stays up and goes quiet. And no
// line carries anything shaped like a credential, in whatever field or message it came.
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { redactCredentials } from "./logger.js";

const LOGGER = new URL("./logger.ts", import.meta.url).href;

/** Runs `body` in a child with `log` = createLogger("info", true, true); resolves with stderr lines as they are when `until` says. */
function runChild(
  body: string,
  until: (lines: string[]) => boolean,
  timeoutMs = 20_000,
): Promise<{ lines: string[]; exited: boolean }> {
  const script = `import { createLogger } from ${JSON.stringify(LOGGER)};\nconst log = createLogger("info", true, true);\n${body}`;
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "--eval", script], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let text = "";
  let exited = false;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`timed out; stderr so far: ${text.slice(-500)}`));
    }, timeoutMs);
    const check = () => {
      const lines = text.split("\n").filter(Boolean);
      if (until(lines) || exited) {
        clearTimeout(timer);
        child.kill();
        resolve({ lines, exited });
      }
    };
    child.stderr.on("data", (c: Buffer) => {
      text += c.toString("utf8");
      check();
    });
    child.once("exit", () => {
      exited = true;
      check();
    });
  });
}

describe("buffered server logger", () => {
  it("writes every line, in order, when the process exits right after logging", async () => {
    const { lines, exited } = await runChild(
      `for (let i = 0; i < 5000; i++) log.info({ i }, "line");\nprocess.exit(0);`,
      () => false,
    );
    expect(exited).toBe(true);
    expect(lines).toHaveLength(5000);
    expect(lines.map((l) => (JSON.parse(l) as { i: number }).i)).toEqual(Array.from({ length: 5000 }, (_, i) => i));
  });

  it("writes a quiet server's last lines within a moment, without waiting for more", async () => {
    const started = Date.now();
    const { lines, exited } = await runChild(
      `log.info("one"); log.info("two");\nsetInterval(() => {}, 1000);`,
      (l) => l.length >= 2,
    );
    expect(exited).toBe(false);
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(["one", "two"]);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("still redacts credentials", async () => {
    const key = `apk_${"k".repeat(43)}`;
    const { lines } = await runChild(
      `log.info({ authorization: "Bearer secret-key", reason: "repoId: no repository with ID ${key}" }, "req");\n` +
        `log.child({ path: "/v/${key}" }).warn({ err: new Error("boom ${key}") }, "message with ${key}");\nprocess.exit(0);`,
      () => false,
    );
    expect(lines).toHaveLength(2);
    expect(lines.join("\n")).not.toContain("secret-key");
    expect(lines.join("\n")).not.toContain(key.slice(4, 20));
    expect(JSON.parse(lines[0]!)).toMatchObject({
      authorization: "[redacted]",
      reason: "repoId: no repository with ID apk_[redacted]",
      msg: "req",
    });
    expect(JSON.parse(lines[1]!)).toMatchObject({
      path: "/v/apk_[redacted]",
      err: { message: "boom apk_[redacted]" },
      msg: "message with apk_[redacted]",
    });
  });
});

const KEY = `apk_${"A1b2C3d4-_".repeat(4)}xyz`;
const WORKLOAD = `aps_${"Zz9_-".repeat(8)}abc`;
const JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyIiwib3JnX2lkIjoibyJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ";

describe("redactCredentials", () => {
  it.each([
    ["an API key in a reason", `repoId: no repository with ID ${KEY}`, "repoId: no repository with ID apk_[redacted]"],
    ["a workload token in a path", `/api/v0/sessions/${WORKLOAD}/messages`, "/api/v0/sessions/aps_[redacted]/messages"],
    ["a key glued to other text", `name=x${KEY}!`, "name=xapk_[redacted]!"],
    ["a JWT in a quoted value", `sessionId: no session "${JWT}"`, 'sessionId: no session "[redacted JWT]"'],
    ["a JWT without its signature", `${JWT.split(".").slice(0, 2).join(".")} end`, "[redacted JWT] end"],
    ["a Bearer value of any shape", "got Bearer opaque-token-123 here", "got Bearer [redacted] here"],
    ["Bearer and a key", `authorization was "Bearer ${KEY}"`, 'authorization was "Bearer [redacted]"'],
    ["several in one line", `${KEY} ${WORKLOAD} ${JWT}`, "apk_[redacted] aps_[redacted] [redacted JWT]"],
  ])("replaces %s", (_what, text, expected) => {
    expect(redactCredentials(text)).toBe(expected);
  });

  it("leaves text without credentials as it is", () => {
    for (const text of [
      "rpc",
      '{"level":30,"msg":"listening","rest":"http://127.0.0.1:8080"}',
      "apk_ prefix",
      "the apk_ prefix is apk_abc",
      "eyJ alone",
      "bearer",
    ]) {
      expect(redactCredentials(text)).toBe(text);
    }
  });
});
