// Runs deploy/envoy/error-mapper.lua, unchanged, under a Lua VM (wasmoon: the reference Lua
// compiled to WebAssembly), with envoy-lua-harness.lua standing in for Envoy's Lua filter API.
// The script is written for LuaJIT (Lua 5.1), which Envoy embeds, and avoids everything that
// differs between 5.1 and the VM's 5.4.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { LuaFactory, type LuaEngine } from "wasmoon";

const MAPPER = new URL("../../deploy/envoy/error-mapper.lua", import.meta.url);
const HARNESS = new URL("./envoy-lua-harness.lua", import.meta.url);
const DRIVER = new URL("./luajit-driver.lua", import.meta.url);
const REPO_ROOT = new URL("../../", import.meta.url);

export type HeaderList = readonly (readonly [string, string])[];

/** What reached the Lua filter on the response path: status, headers, body ("" if none). */
export interface UpstreamResponse {
  readonly status: number;
  readonly headers?: HeaderList;
  readonly body?: string;
}

export interface LuaRequest {
  readonly method: string;
  readonly path: string;
  readonly headers?: HeaderList;
}

export interface LuaResult {
  /** True when envoy_on_request answered itself (request_handle:respond). */
  readonly responded: boolean;
  readonly status: number;
  /** Response headers, lowercased names, without :status. */
  readonly headers: ReadonlyMap<string, string>;
  readonly body: string;
  /** The request headers as the filter passed them on. */
  readonly requestHeaders: ReadonlyMap<string, string>;
  readonly logs: readonly string[];
  /** What the access log shows as the path (dynamic metadata `path`). */
  readonly loggedPath: string;
}

function headerText(list: HeaderList): string {
  for (const [name, value] of list) {
    if (/[\n\0]/.test(name + value)) throw new Error(`header ${name} cannot cross into the Lua harness`);
  }
  return list.map(([n, v]) => `${n}: ${v}`).join("\n");
}

function parseHeaderText(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const at = line.indexOf(": ", line.startsWith(":") ? 1 : 0);
    out.set(line.slice(0, at), line.slice(at + 2));
  }
  return out;
}

export interface ErrorMapper {
  exchange(request: LuaRequest, upstream?: UpstreamResponse): LuaResult;
  close(): void;
}

/** The three strings run_exchange takes. */
function harnessInput(request: LuaRequest, upstream: UpstreamResponse = { status: 200 }): [string, string, string] {
  const req = headerText([[":method", request.method], [":path", request.path], ...(request.headers ?? [])]);
  const body = upstream.body ?? "";
  if (body.includes("\0")) throw new Error("a NUL byte cannot cross into the Lua harness");
  const res = headerText([[":status", String(upstream.status)], ...(upstream.headers ?? [])]);
  return [req, res, body];
}

interface HarnessOutput {
  responded: boolean;
  headers: string;
  body: string;
  logs: string;
  requestHeaders: string;
  loggedPath: string;
}

function toResult(out: HarnessOutput): LuaResult {
  const headers = parseHeaderText(out.headers);
  const status = Number(headers.get(":status"));
  headers.delete(":status");
  return {
    responded: out.responded,
    status,
    headers,
    body: out.body,
    requestHeaders: parseHeaderText(out.requestHeaders),
    logs: out.logs.split("\n").filter((l) => l !== ""),
    loggedPath: out.loggedPath,
  };
}

export async function loadErrorMapper(): Promise<ErrorMapper> {
  const engine: LuaEngine = await new LuaFactory().createEngine();
  await engine.doString(errorMapperSource());
  await engine.doString(readFileSync(HARNESS, "utf8"));
  const run = engine.global.get("run_exchange") as (req: string, res: string, body: string) => Record<string, unknown>;
  return {
    exchange(request, upstream) {
      const out = run(...harnessInput(request, upstream));
      return toResult({
        responded: out.responded === true,
        headers: String(out.headers),
        body: String(out.body ?? ""),
        logs: String(out.logs ?? ""),
        requestHeaders: String(out.requestHeaders),
        loggedPath: String(out.loggedPath ?? ""),
      });
    },
    close() {
      engine.global.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The script's constant tables, read from its text. They are copies (of services/edge/status.ts
// and of Node's reason phrases) that Envoy runs as they are; the tests compare them entry for entry.

/** The text of deploy/envoy/error-mapper.lua. */
export function errorMapperSource(): string {
  return readFileSync(MAPPER, "utf8");
}

/**
 * The entries of `local NAME = { [key] = value, ... }` in Lua source: whole-number keys, values a
 * whole number or a double-quoted string without escapes, `--` comments after an entry. Anything
 * else between the braces is an error, so that no entry can be passed over unread.
 */
export function luaConstantTable(source: string, name: string): Record<number, number | string> {
  const body = new RegExp(`^local ${name} = \\{\\n([\\s\\S]*?)^\\}`, "m").exec(source)?.[1];
  if (body === undefined) throw new Error(`no table ${name} in the Lua source`);
  const entry = /\s*\[(\d+)\]\s*=\s*(?:(\d+)|"([^"\\]*)")\s*,?(?:[ \t]*--[^\n]*)?/y;
  const out: Record<number, number | string> = {};
  for (let at = 0; body.slice(at).trim() !== ""; at = entry.lastIndex) {
    entry.lastIndex = at;
    const e = entry.exec(body);
    if (!e) throw new Error(`${name}: cannot read ${JSON.stringify(body.slice(at, at + 40))}`);
    const key = Number(e[1]);
    if (key in out) throw new Error(`${name}: [${key}] is given twice`);
    out[key] = e[2] !== undefined ? Number(e[2]) : e[3]!;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The same exchanges under LuaJIT, the VM Envoy embeds, when a luajit binary is installed
// (Debian: apt-get install luajit). CI does without it; wasmoon runs every case there.

export function luajitAvailable(): boolean {
  return spawnSync("luajit", ["-v"], { encoding: "utf8" }).status === 0;
}

export function runUnderLuajit(exchanges: readonly [LuaRequest, UpstreamResponse | undefined][]): LuaResult[] {
  const input = exchanges
    .flatMap(([req, res]) => harnessInput(req, res))
    .map((s) => `${Buffer.byteLength(s)}\n${s}`)
    .join("");
  const proc = spawnSync("luajit", [fileURLToPath(DRIVER), fileURLToPath(REPO_ROOT)], {
    input,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (proc.status !== 0) throw new Error(`luajit failed: ${proc.stderr.toString("utf8")}`);
  const out = proc.stdout;
  const strings: string[] = [];
  let at = 0;
  while (at < out.length) {
    const nl = out.indexOf(10, at);
    const n = Number(out.subarray(at, nl).toString("ascii"));
    strings.push(out.subarray(nl + 1, nl + 1 + n).toString("utf8"));
    at = nl + 1 + n;
  }
  const results: LuaResult[] = [];
  for (let i = 0; i < strings.length; i += 6) {
    results.push(
      toResult({
        responded: strings[i] === "true",
        headers: strings[i + 1]!,
        body: strings[i + 2]!,
        logs: strings[i + 3]!,
        requestHeaders: strings[i + 4]!,
        loggedPath: strings[i + 5]!,
      }),
    );
  }
  return results;
}
