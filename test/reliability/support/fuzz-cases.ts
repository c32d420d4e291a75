// Turns an endpoint description into a fast-check arbitrary of whole HTTP requests, each with
// the answer class it must get: a valid request must succeed, one with a known-invalid part must
// be refused with a 4xx, and one with hostile parts may go either way but must stay well formed.
import fc from "fast-check";
import { MAX_REQUEST_BODY_BYTES } from "../../../services/server.js";
import type { Expectation } from "./invariants.js";
import { Fresh, type Endpoint, type Param } from "./endpoints.js";
import {
  brokenPercent,
  hostileJson,
  hostileTargetString,
  INVALID_UTF8_BODIES,
  MALFORMED_JSON,
  percentEncode,
  rawEncode,
} from "./fuzz-values.js";

export interface FuzzCase {
  method: string;
  target: string;
  headers: Record<string, string>;
  body?: Buffer | string;
  expected: Expectation;
  /** What was done to the request, for the failure message and the statistics. */
  labels: string[];
  /** The request may reach another route (an empty path segment), so its 2xx has another shape. */
  otherRoute: boolean;
  /**
   * Valid values that are made just before the case is sent (endpoints.ts `Fresh`): each
   * placeholder in the target or body becomes the value made for this case alone.
   */
  fresh: { placeholder: string; of: Fresh }[];
  /**
   * The parameter a 400 must name: set when the request is sound but for one parameter's
   * known-invalid value (no structural damage, every other parameter valid or left out).
   */
  blame?: string;
}

/** The case with its fresh values made (the case itself is kept: shrinking may send it again). */
export async function withFreshValues(c: FuzzCase): Promise<FuzzCase> {
  if (c.fresh.length === 0) return c;
  let { target, body } = c;
  for (const { placeholder, of } of c.fresh) {
    // A broken encoding or a replaced body dropped it: nothing to make.
    if (!target.includes(placeholder) && !(typeof body === "string" && body.includes(placeholder))) continue;
    const value = await of.make();
    target = target.replaceAll(placeholder, percentEncode(value));
    if (typeof body === "string") body = body.replaceAll(JSON.stringify(placeholder), JSON.stringify(value));
  }
  return { ...c, target, body, labels: [...c.labels, `fresh:${c.fresh.map((f) => f.of.what).join(",")}`] };
}

type Choice =
  | { kind: "absent" }
  | { kind: "valid" | "invalid" | "hostile"; value: unknown; encoding?: "percent" | "raw" | "broken" };

const ENCODING = fc.oneof(
  { weight: 8, arbitrary: fc.constant("percent" as const) },
  { weight: 2, arbitrary: fc.constant("raw" as const) },
  { weight: 1, arbitrary: fc.constant("broken" as const) },
);

function choice(p: Param): fc.Arbitrary<Choice> {
  const inTarget = p.in !== "body";
  const hostile = inTarget ? hostileTargetString : hostileJson;
  const options: fc.WeightedArbitrary<Choice>[] = [
    { weight: 5, arbitrary: p.valid.map((value) => ({ kind: "valid" as const, value })) },
    { weight: 1, arbitrary: p.invalid.map((value) => ({ kind: "invalid" as const, value })) },
    { weight: 2, arbitrary: hostile.map((value) => ({ kind: "hostile" as const, value })) },
  ];
  if (p.in !== "path") options.push({ weight: 2, arbitrary: fc.constant({ kind: "absent" as const }) });
  const base = fc.oneof(...options);
  if (!inTarget) return base;
  return fc.tuple(base, ENCODING).map(([c, encoding]) => (c.kind === "absent" ? c : { ...c, encoding }));
}

/** Structural damage done to the whole request, with the answer it forces. */
type Mutation =
  | { kind: "none" }
  | { kind: "wrongMethod"; method: string }
  | { kind: "unknownQuery" }
  | { kind: "duplicateQuery" }
  | { kind: "malformedJson"; text: string }
  | { kind: "invalidUtf8"; bytes: Buffer }
  | { kind: "notAnObject"; value: unknown }
  | { kind: "extraField" }
  | { kind: "contentType"; value: string | undefined }
  | { kind: "oversized" }
  | { kind: "trailingSlash" }
  | { kind: "hugeTarget" };

const WRONG_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "PROPFIND", "FOO"];

function mutation(e: Endpoint, routed: Set<string>): fc.Arbitrary<Mutation> {
  const hasBody = e.params.some((p) => p.in === "body");
  const wrong = WRONG_METHODS.filter((m) => !routed.has(m));
  const options: fc.WeightedArbitrary<Mutation>[] = [
    { weight: 30, arbitrary: fc.constant({ kind: "none" as const }) },
    { weight: 2, arbitrary: fc.constantFrom(...wrong).map((method) => ({ kind: "wrongMethod" as const, method })) },
    { weight: 2, arbitrary: fc.constant({ kind: "unknownQuery" as const }) },
    { weight: 2, arbitrary: fc.constant({ kind: "duplicateQuery" as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: "trailingSlash" as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: "hugeTarget" as const }) },
  ];
  if (hasBody) {
    options.push(
      {
        weight: 2,
        arbitrary: fc.constantFrom(...MALFORMED_JSON).map((text) => ({ kind: "malformedJson" as const, text })),
      },
      {
        weight: 2,
        arbitrary: fc.constantFrom(...INVALID_UTF8_BODIES).map((bytes) => ({ kind: "invalidUtf8" as const, bytes })),
      },
      {
        weight: 2,
        arbitrary: fc
          .constantFrom<unknown>([], [{}], 5, "text", true, null)
          .map((value) => ({ kind: "notAnObject" as const, value })),
      },
      { weight: 2, arbitrary: fc.constant({ kind: "extraField" as const }) },
      {
        weight: 2,
        arbitrary: fc
          .constantFrom(
            undefined,
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
            "json",
          )
          .map((value) => ({ kind: "contentType" as const, value })),
      },
      { weight: 1, arbitrary: fc.constant({ kind: "oversized" as const }) },
    );
  }
  return fc.oneof(...options);
}

function encodeTargetValue(
  c: Extract<Choice, { value: unknown }>,
  separators: string,
): { text: string; broken: boolean } {
  const s = String(c.value);
  if (c.encoding === "broken") return { text: "", broken: true };
  return { text: c.encoding === "raw" ? rawEncode(s, separators) : percentEncode(s), broken: false };
}

/** Requests for one endpoint, authorized by `key`. */
export function fuzzCases(e: Endpoint, routed: Set<string>, key: string): fc.Arbitrary<FuzzCase> {
  const params = e.params;
  return fc.tuple(fc.tuple(...params.map(choice)), mutation(e, routed), brokenPercent).map(([choices, m, broken]) => {
    const labels: string[] = [];
    // What each parameter alone forces; the request's expectation combines them (4xx wins over
    // any, any over 2xx) with what the structural mutation forces.
    const forced: Expectation[] = [];
    let path = e.template;
    let otherRoute = false;
    let oversized = false;
    const query: { param: number; text: string }[] = [];
    const body: Record<string, unknown> = {};
    const fresh: FuzzCase["fresh"] = [];
    params.forEach((p, i) => {
      let c = choices[i]!;
      // Letters only, so that every encoding leaves it as it is and withFreshValues finds it.
      if (c.kind === "valid" && c.value instanceof Fresh) {
        const placeholder = `zzFreshValue${String.fromCharCode(65 + i)}zz`;
        fresh.push({ placeholder, of: c.value });
        c = { ...c, value: placeholder };
      }
      labels.push(
        `${p.name}:${c.kind}${"encoding" in c && c.encoding && c.encoding !== "percent" ? `/${c.encoding}` : ""}`,
      );
      if (c.kind === "absent") {
        forced[i] = p.required ? "4xx" : "2xx";
        return;
      }
      forced[i] = c.kind === "invalid" ? "4xx" : c.kind === "hostile" ? "any" : "2xx";
      if (p.in === "body") {
        body[p.name] = c.value;
        return;
      }
      const { text, broken: isBroken } = encodeTargetValue(c, p.in === "path" ? "/?#%" : "&#=%+");
      let value = text;
      if (isBroken) {
        value = broken;
        // A path variable is decoded strictly (400); a query value keeps a malformed % literally
        // as Envoy does, so there only its meaning can be wrong.
        forced[i] = p.in === "path" ? "4xx" : "any";
      } else if (c.encoding === "raw" && /[\u0080-\u00ff]/.test(String(c.value))) {
        // Raw bytes U+0080..U+00FF are read as Latin-1 characters: another value, maybe valid.
        forced[i] = forced[i] === "2xx" ? "any" : forced[i]!;
      }
      if (p.in === "path") {
        // An empty segment changes which route matches at all: the edge drops trailing empty
        // segments as Envoy does, so /sessions/{id}/messages/ is the message list.
        if (value === "") {
          forced[i] = "any";
          otherRoute = true;
        }
        path = path.replace(`{${p.name}}`, value);
      } else {
        query.push({ param: i, text: `${p.name}=${value}` });
      }
    });
    let expected: Expectation = "2xx";
    const worst = (x: Expectation) => {
      if (x === "4xx" || (x === "any" && expected === "2xx")) expected = x;
    };

    const routeMethod = e.method;
    let method: string = routeMethod;
    let contentType: string | undefined = "application/json";
    const hasBodyParams = params.some((p) => p.in === "body");
    let bodyOut: Buffer | string | undefined = hasBodyParams ? JSON.stringify(body) : undefined;
    labels.push(`mutation:${m.kind}`);
    switch (m.kind) {
      case "none":
        break;
      case "wrongMethod":
        method = m.method;
        // With an empty path variable the path may be another route's, which this method has
        // (POST /computers/ is POST /computers): then any answer that route gives.
        expected = otherRoute ? "any" : "4xx";
        break;
      case "unknownQuery":
        query.push({ param: -1, text: "zzUnknownParam=1" });
        worst("4xx");
        break;
      case "duplicateQuery":
        // A singular field given twice: which value counts is the edge's choice, so that
        // parameter no longer decides the answer.
        if (query.length > 0) {
          query.push({ param: query[0]!.param, text: query[0]!.text.replace(/=.*/, "=1") });
          forced[query[0]!.param] = "any";
        } else {
          query.push({ param: -1, text: "limit=1" }, { param: -1, text: "limit=2" });
          worst("any");
        }
        break;
      case "trailingSlash":
        // Trailing empty segments are dropped, as Envoy's path matcher does: the same route.
        path += "/";
        break;
      case "hugeTarget":
        query.push({ param: -1, text: `pad=${"p".repeat(20_000)}` });
        expected = "4xx";
        break;
      case "malformedJson":
        bodyOut = m.text;
        worst("4xx");
        break;
      case "invalidUtf8":
        bodyOut = m.bytes;
        worst("4xx");
        break;
      case "notAnObject":
        bodyOut = JSON.stringify(m.value);
        // null reads as "no fields": then only the required fields decide.
        worst(m.value === null ? "any" : "4xx");
        break;
      case "extraField":
        bodyOut = JSON.stringify({ ...body, zzUnknownField: 1 });
        // OTLP/JSON receivers must ignore fields they do not know (forward compatibility).
        worst(e.otlp ? "any" : "4xx");
        break;
      case "contentType":
        contentType = m.value;
        worst("4xx");
        break;
      case "oversized":
        // Announced past the edge's limit; the edge must refuse before reading it (so only a
        // little of it is sent).
        bodyOut = JSON.stringify({ ...body, pad: "x".repeat(1_000) });
        oversized = true;
        expected = "4xx";
        break;
    }
    const headers: Record<string, string> = { authorization: `Bearer ${key}` };
    if (oversized) headers["content-length"] = String(MAX_REQUEST_BODY_BYTES + 1);
    if (bodyOut !== undefined && contentType !== undefined) headers["content-type"] = contentType;
    // A body with the wrong method, or with a GET: the edge ignores bodies of routes without one.
    if (
      !hasBodyParams &&
      bodyOut === undefined &&
      m.kind === "wrongMethod" &&
      ["POST", "PUT", "PATCH"].includes(method)
    ) {
      bodyOut = "{}";
      headers["content-type"] = "application/json";
    }
    for (const f of forced) worst(f);
    // Another route with this method answers as that route does, whatever this route's
    // parameters would have forced (GET /computers/ is the list, which reads no body).
    if (m.kind === "wrongMethod" && otherRoute) expected = "any";
    const culprits = forced.flatMap((f, i) => (f === "2xx" ? [] : [i]));
    const culprit = culprits.length === 1 ? culprits[0]! : -1;
    const blamed = choices[culprit];
    const blame =
      m.kind === "none" && blamed?.kind === "invalid" && blamed.encoding !== "broken" && forced[culprit] === "4xx"
        ? params[culprit]!.name
        : undefined;
    const target = path + (query.length ? `?${query.map((q) => q.text).join("&")}` : "");
    return {
      method,
      target,
      headers,
      body: method === "HEAD" || method === "GET" ? undefined : bodyOut,
      expected,
      labels,
      otherRoute,
      fresh,
      ...(blame ? { blame } : {}),
    };
  });
}
