// The part of grpcurl that the README's gRPC lines use, on the reflection client of
// reflection-client.ts: grpcurl itself is a Go binary that no package registry here ships, so
// test/readme-grpc.test.ts runs the README's lines through this instead. Every flag or verb it
// does not know fails the line, so the README cannot drift into something untested.
//
//   grpcurl -plaintext [-H 'name: value']... [-d JSON] ADDRESS list [SERVICE]
//   grpcurl -plaintext [-H 'name: value']... [-d JSON] ADDRESS describe SYMBOL
//   grpcurl -plaintext [-H 'name: value']... [-d JSON] ADDRESS pkg.Service/Method
//
// As in grpcurl, the -H headers go with the reflection calls and with the call itself.
import * as protoLoader from "@grpc/proto-loader";
import { fileDescriptorSet, filesContainingSymbol, listServices, reflectedClient, unary } from "./reflection-client.js";

/** A command line's words, as a POSIX shell splits them: quotes, and $NAME expanded outside single quotes. */
export function shellWords(line: string, variables: Readonly<Record<string, string>>): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote === "'") {
      if (c === "'") quote = undefined;
      else word += c;
    } else if (c === "$" && /[A-Za-z_]/.test(line[i + 1] ?? "")) {
      const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(line.slice(i + 1))![0];
      const value = variables[name];
      if (value === undefined) throw new Error(`$${name} is not set`);
      word = (word ?? "") + value;
      i += name.length;
    } else if (quote === '"') {
      if (c === '"') quote = undefined;
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= "";
    } else if (c === " " || c === "\t") {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else {
      word = (word ?? "") + c;
    }
  }
  if (quote) throw new Error(`unterminated ${quote} in: ${line}`);
  if (word !== undefined) words.push(word);
  return words;
}

export interface GrpcurlResult {
  /** What grpcurl prints: one name a line for list, the symbol's kind for describe, the response as JSON. */
  readonly output: string;
  /** The response of a call, as proto-loader's plain object. */
  readonly response?: Record<string, unknown>;
}

/** Runs one grpcurl command line; `urlOf` maps its ADDRESS to the server's URL. */
export async function grpcurl(words: readonly string[], urlOf: (address: string) => string): Promise<GrpcurlResult> {
  if (words[0] !== "grpcurl") throw new Error(`not a grpcurl line: ${words.join(" ")}`);
  const headers: Record<string, string> = {};
  let plaintext = false;
  let data: string | undefined;
  const positional: string[] = [];
  for (let i = 1; i < words.length; i++) {
    const word = words[i]!;
    if (word === "-plaintext") plaintext = true;
    else if (word === "-H") {
      const header = words[++i] ?? "";
      const colon = header.indexOf(":");
      if (colon < 1) throw new Error(`-H ${header}: expected 'name: value'`);
      headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
    } else if (word === "-d") data = words[++i];
    else if (word.startsWith("-")) throw new Error(`grpcurl flag ${word} is not emulated`);
    else positional.push(word);
  }
  // The listeners speak cleartext HTTP/2: without -plaintext grpcurl tries TLS and fails.
  if (!plaintext) throw new Error("the gRPC ports are cleartext: grpcurl needs -plaintext");
  const [address, verb, symbol, ...rest] = positional;
  if (address === undefined || verb === undefined || rest.length > 0)
    throw new Error(`expected ADDRESS and a verb or method: ${positional.join(" ")}`);
  const url = urlOf(address);

  if (verb === "list") {
    if (symbol === undefined) return { output: (await listServices(url, headers)).join("\n") };
    const service = await describedService(url, symbol, headers);
    return {
      output: Object.keys(service.methods)
        .map((m) => `${symbol}.${m}`)
        .join("\n"),
    };
  }
  if (verb === "describe") {
    if (symbol === undefined) throw new Error("describe needs a symbol");
    const dot = symbol.lastIndexOf(".");
    const files = await filesContainingSymbol(url, symbol, headers);
    const definition = protoLoader.loadFileDescriptorSetFromBuffer(fileDescriptorSet(files));
    const asService = definition[symbol] as protoLoader.ServiceDefinition | undefined;
    if (asService !== undefined && !("format" in asService)) return { output: `${symbol} is a service` };
    const method = (definition[symbol.slice(0, dot)] as protoLoader.ServiceDefinition | undefined)?.[
      symbol.slice(dot + 1)
    ];
    if (method !== undefined) {
      const nameOf = (type: { type: object }) => (type.type as { name: string }).name;
      return {
        output: `${symbol} is a method: rpc ${symbol.slice(dot + 1)} ( .${nameOf(method.requestType)} ) returns ( .${nameOf(method.responseType)} )`,
      };
    }
    if (definition[symbol] !== undefined) return { output: `${symbol} is a message` };
    throw new Error(`${symbol}: the returned descriptors do not declare it`);
  }
  // A method: pkg.Service/Method.
  const slash = verb.indexOf("/");
  if (slash < 1 || symbol !== undefined) throw new Error(`unknown verb or method: ${verb}`);
  const serviceName = verb.slice(0, slash);
  const client = await reflectedClient(url, serviceName, headers);
  try {
    const response = await unary(client, verb.slice(slash + 1), JSON.parse(data ?? "{}"), headers);
    return { output: JSON.stringify(response, null, 2), response };
  } finally {
    client.close();
  }
}

async function describedService(
  url: string,
  name: string,
  headers: Record<string, string>,
): Promise<{ methods: protoLoader.ServiceDefinition }> {
  const files = await filesContainingSymbol(url, name, headers);
  const service = protoLoader.loadFileDescriptorSetFromBuffer(fileDescriptorSet(files))[name];
  if (service === undefined || "format" in service) throw new Error(`${name} is not a service`);
  return { methods: service as protoLoader.ServiceDefinition };
}
