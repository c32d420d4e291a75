// What a runner answers with (run-loop.ts's Answer).
import { spawn } from "node:child_process";
import { newId } from "../../platform/ids.js";
import type { Answer } from "./run-loop.js";

/** The first words of every demo reply: nobody should take it for an agent's. */
export const DEMO_REPLY_PREFIX = "[demo runner] This reply comes from agentplane's demo runner, not from an agent.";

/**
 * The demo runner's answer: one assistant message that says what it is and repeats what it was
 * asked, so a newcomer sees a run go through (pending, running, idle, a reply, the events, the
 * webhooks) without an agent installed.
 */
export const demoAnswer: Answer = async (claim) => {
  const asked = claim.pendingMessages
    .map((m) => m.content.map((c) => c.text).join("\n"))
    .join("\n\n")
    .slice(0, 2_000);
  const text = `${DEMO_REPLY_PREFIX} You wrote:\n\n${asked}\n\nConnect a real runner (agentplane runner --exec …) to have an agent answer.`;
  const parentId = claim.pendingMessages.at(-1)?.id;
  return [{ role: "assistant", content: [{ text, id: newId() }], parentId, visibility: "both" }];
};

/** The longest a command may run for one run. */
export const COMMAND_TIMEOUT_MS = 10 * 60 * 1000;
const MAX_OUTPUT_CHARS = 500_000;

/**
 * Runs `command` (through /bin/sh) once per run, with the pending user messages' text on its
 * standard input, and answers with its standard output; a command that fails (a non-zero exit,
 * a signal, the timeout) gives an isError message with its standard error.
 */
export function commandAnswer(command: string): Answer {
  return (claim, signal) =>
    new Promise((resolve) => {
      const child = spawn("/bin/sh", ["-c", command], { stdio: ["pipe", "pipe", "pipe"], signal });
      let out = "";
      let err = "";
      child.stdout.setEncoding("utf8").on("data", (c: string) => (out = (out + c).slice(0, MAX_OUTPUT_CHARS)));
      child.stderr.setEncoding("utf8").on("data", (c: string) => (err = (err + c).slice(-4_000)));
      const timer = setTimeout(() => child.kill("SIGTERM"), COMMAND_TIMEOUT_MS);
      child.on("error", () => {});
      child.stdin.on("error", () => {});
      child.stdin.end(claim.pendingMessages.map((m) => m.content.map((c) => c.text).join("\n")).join("\n\n"));
      const parentId = claim.pendingMessages.at(-1)?.id;
      child.on("close", (code, sig) => {
        clearTimeout(timer);
        const failed = code !== 0;
        const text = failed
          ? `The runner's command failed (${sig ? `signal ${sig}` : `exit ${code}`}).${err ? `\n\n${err}` : ""}`
          : out || "(the command printed nothing)";
        resolve([
          { role: "assistant", content: [{ text, id: newId() }], parentId, ...(failed ? { isError: true } : {}) },
        ]);
      });
    });
}
