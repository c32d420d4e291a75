// fast-check arbitraries for hostile request parts: strings and numbers at and past every
// boundary, wrong JSON types, huge values, and the encodings (percent, UTF-8) they travel in.
import fc from "fast-check";

/** Strings that sit on a boundary of something: numbers, IDs, encodings, injections. */
export const BOUNDARY_STRINGS = [
  "",
  " ",
  "0",
  "-1",
  "1",
  "20",
  "100",
  "101",
  "1.5",
  "1e2",
  "-0",
  "NaN",
  "Infinity",
  "-Infinity",
  "9007199254740993",
  "99999999999999999999999",
  "0x10",
  "+1",
  "01",
  " 1",
  "1 ",
  "true",
  "null",
  "undefined",
  "[]",
  "{}",
  '""',
  "../../etc/passwd",
  "..",
  ".",
  "%",
  "%%",
  "%00",
  "\u0000",
  "\u0001",
  "\t",
  "\n",
  "\r\n",
  "\u2028",
  "😀",
  "\ud800",
  "\udfff",
  "' OR 1=1 --",
  "'; drop table sessions; --",
  "<script>alert(1)</script>",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a Log4Shell-style lookup string, a literal attack payload, not a template
  "${jndi:ldap://x}",
  "{{7*7}}",
  "a/b",
  "a?b",
  "a#b",
  "a&b=c",
  "a=b",
  "+",
  "~",
  "00000000-0000-0000-0000-000000000000",
  "ffffffff-ffff-ffff-ffff-ffffffffffff",
  "2026-02-30",
  "2026-13-01",
  "1970-01-01",
  "9999-12-31",
  "0000-00-00",
  "2026-01-14",
];

/** Numbers past every limit a field might have, and the ones JSON cannot carry exactly. */
export const BOUNDARY_NUMBERS = [
  0,
  -0,
  1,
  -1,
  20,
  100,
  101,
  0.5,
  -1.5,
  2 ** 31,
  -(2 ** 31) - 1,
  2 ** 53 + 2,
  -(2 ** 53) - 2,
  1e308,
  -1e308,
  5e-324,
  63,
  64,
  2048,
  2049,
];

const hugeLength = fc.constantFrom(1_000, 5_000, 70_000, 300_000);

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...BOUNDARY_STRINGS) },
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 20 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(hugeLength, fc.constantFrom("a", "é", "😀", "%", "\u0000"))
      .map(([n, c]) => c.repeat(Math.floor(n / c.length))),
  },
);

/** Strings for a request target (path segment or query value): huge ones stay below Node's 16 KiB header limit. */
export const hostileTargetString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...BOUNDARY_STRINGS) },
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 20 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom(300, 2_000, 4_000).map((n) => "z".repeat(n)) },
);

/** Any JSON value of the wrong kind for whatever field it lands in. */
export const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom<unknown>(null, true, false, 0, -1, "", [], {}, [null], { "": null }) },
  { weight: 3, arbitrary: fc.constantFrom(...BOUNDARY_NUMBERS) },
  { weight: 3, arbitrary: hostileString },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(10, 1_000, 20_000).map((n) => Array.from({ length: n }, (_, i) => i)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(10, 1_000).map((n) => Array.from({ length: n }, () => ({ name: "x", data: "AAAA" }))),
  },
  { weight: 1, arbitrary: fc.constantFrom(50, 500).map(nested) },
);

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

// How a string is written into a request target.
export type Encoding = "percent" | "raw" | "broken";

/** Percent-encodes the UTF-8 bytes of everything but RFC 3986 unreserved characters (lone surrogates become U+FFFD, as in any UTF-8 encoder). */
export function percentEncode(s: string): string {
  let out = "";
  for (const byte of Buffer.from(s, "utf8")) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/**
 * As "raw": characters Node lets through in a request target (U+0021..U+00FF) go as they are,
 * so U+0080..U+00FF become single bytes that are not UTF-8; only what would break the
 * request line or its structure is percent-encoded.
 */
export function rawEncode(s: string, separators: string): string {
  let out = "";
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (code < 0x21 || code > 0xff || separators.includes(ch)) out += percentEncode(ch);
    else out += ch;
  }
  return out;
}

/** Percent sequences no decoder may accept: truncated, non-hex, overlong, surrogates, bytes that are not UTF-8. */
export const BROKEN_PERCENT = [
  "%",
  "%G1",
  "%1",
  "%C3%28",
  "%FF",
  "%C0%AF",
  "%ED%A0%80",
  "%E2%82",
  "%F8%88%80%80%80",
  "%%41",
  "%u0041",
];

export const brokenPercent: fc.Arbitrary<string> = fc
  .tuple(
    fc.string({ maxLength: 6, unit: fc.constantFrom("a", "b", "1") }),
    fc.constantFrom(...BROKEN_PERCENT),
    fc.string({ maxLength: 6, unit: fc.constantFrom("a", "b", "1") }),
  )
  .map(([a, b, c]) => a + b + c);

/** Raw bytes that are not UTF-8 (for a body). */
export const INVALID_UTF8_BODIES = [
  Buffer.from([0x7b, 0x22, 0x74, 0x65, 0x78, 0x74, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), // {"text":"\xff\xfe"}
  Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]), // {"\xc3(":1}
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xc0, 0xaf]),
];

export const MALFORMED_JSON = [
  "{",
  "}",
  '{"a":}',
  "nul",
  "[1,",
  "{'a':1}",
  '{"a":1,}',
  '"unterminated',
  '{"a":01}',
  "NaN",
  '{"a":1}{"b":2}',
  "\u0000",
];
