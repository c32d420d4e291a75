// A Redis server of the test's own, on a free port, that the test may kill and restart. The
// machine's shared Redis is never touched.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createServer, connect } from "node:net";

export const hasRedisServer = (): boolean => spawnSync("redis-server", ["--version"]).status === 0;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once("error", () => done(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (d) => done(d.toString().startsWith("+PONG")));
  });
}

export interface RedisProcess {
  readonly port: number;
  readonly url: string;
  /** SIGKILL: the server vanishes mid-command, as a crash or an OOM kill would. */
  kill(): Promise<void>;
  /** Starts it again on the same port (empty: it keeps no data). */
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startRedisProcess(): Promise<RedisProcess> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
      stdio: "ignore",
    });
    const deadline = Date.now() + 10_000;
    while (!(await answersPing(port))) {
      if (Date.now() > deadline) throw new Error(`redis-server did not start on port ${port}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const kill = async () => {
    const c = child;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once("exit", () => resolve());
      c.kill("SIGKILL");
    });
  };
  await start();
  return { port, url: `redis://127.0.0.1:${port}`, kill, start, close: kill };
}
