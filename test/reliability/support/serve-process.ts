// `agentplane serve` in a child process (the real binary), for tests that send it signals.
import { spawn, type ChildProcess } from "node:child_process";

export interface ServeProcess {
  readonly child: ChildProcess;
  readonly grpcUrl: string;
  readonly internalGrpcUrl: string;
  readonly restUrl: string | undefined;
  /** Everything it printed. */
  output(): string;
  /** SIGTERM, then its exit code. */
  terminate(): Promise<number | null>;
}

export async function startServeProcess(env: Record<string, string>): Promise<ServeProcess> {
  const child = spawn(process.execPath, ["bin/agentplane.js", "serve"], {
    env: {
      ...process.env,
      PORT: "0",
      GRPC_PORT: "0",
      INTERNAL_GRPC_PORT: "0",
      SEED_DEMO: "false",
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "warn",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const urls = await new Promise<{ grpc: string; internal: string; rest?: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${out.slice(-2000)}`)), 60_000);
    const poll = setInterval(() => {
      const grpc = /gRPC: (http:\/\/\S+)/.exec(out);
      const internal = /internal gRPC: (http:\/\/\S+)/.exec(out);
      if (grpc?.[1] && internal?.[1]) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve({ grpc: grpc[1], internal: internal[1], rest: /REST edge: (http:\/\/\S+)/.exec(out)?.[1] });
      }
    }, 50);
    void exited.then((code) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`server exited ${code}: ${out.slice(-2000)}`));
    });
  });
  return {
    child,
    grpcUrl: urls.grpc,
    internalGrpcUrl: urls.internal,
    restUrl: urls.rest,
    output: () => out,
    async terminate() {
      if (child.exitCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}
