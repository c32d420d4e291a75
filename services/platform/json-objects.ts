// How many messages a JSON text may become, counted before it is parsed, so that a body of many
// tiny values (`{},` is three bytes, `null,` five; parsed and made into messages, 20–60 times
// that in heap) is refused before JSON.parse builds them.
//
// What may become a message: an object (a message, or a google.protobuf.Struct), an array (a
// ListValue inside a Struct) and every item of an array (a message of a repeated field, or a
// Value inside a ListValue: `[null, null]` is two messages), each at least MESSAGE_HEAP_BYTES
// decoded; and every member of an object, which in a Struct is a map entry, its key and a Value
// (MEMBER_HEAP_BYTES: less than a message, since in a message a member is a field, which costs
// nothing of its own, and such members are the usual case). A message's binary form is no longer
// than its JSON, so a body whose possible messages alone pass decodedSizeLimit of its length is
// refused; one within it is checked again as a message once parsed, where that can be done (the
// REST edge: edge.ts).

import { DECODE_FACTOR, DECODE_SLACK_BYTES, decodedSizeLimit, MESSAGE_HEAP_BYTES } from "./decoded-size.js";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const CLOSE_BRACE = 0x7d;
const COMMA = 0x2c;
const COLON = 0x3a;

/**
 * Counted per object member. In a Struct a member is a map entry, its key and a Value, about 160
 * bytes; distinct keys make the shortest members `"ab":0,`, 7 bytes, so 96 refuses a Struct of
 * them (13 times their bytes) while an object of short fields, `"id":1,` beside longer ones,
 * stays under 8 times.
 */
const MEMBER_HEAP_BYTES = 96;

/** Bodies shorter than this cannot hold enough values (one a byte at most) to pass the limit: no count. */
const FEWEST_BYTES_TO_PASS = Math.floor(DECODE_SLACK_BYTES / (MESSAGE_HEAP_BYTES - DECODE_FACTOR));

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

export interface PossibleMessages {
  /** Objects, arrays and array items. */
  readonly messages: number;
  /** Members of objects. */
  readonly members: number;
}

/**
 * Objects, arrays, array items and object members in `json` (UTF-8 bytes), outside strings; one
 * pass, no allocation but a byte per level of nesting. Validity is JSON.parse's to judge: on
 * invalid text the count is of the same order.
 */
export function countPossibleMessages(json: Uint8Array): PossibleMessages {
  let count = 0;
  let members = 0;
  let inString = false;
  // Whether each open container is an array (1) or an object (0), and how deep we are.
  let kinds = new Uint8Array(64);
  let depth = 0;
  // Just after `[`: the next value, unless `]`, is the array's first item.
  let firstItem = false;
  for (let i = 0; i < json.length; i++) {
    const b = json[i]!;
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
      continue;
    }
    if (isSpace(b)) continue;
    if (firstItem) {
      firstItem = false;
      if (b !== CLOSE_BRACKET) count++;
    }
    if (b === QUOTE) inString = true;
    else if (b === OPEN_BRACE || b === OPEN_BRACKET) {
      count++;
      if (depth === kinds.length) {
        const wider = new Uint8Array(kinds.length * 2);
        wider.set(kinds);
        kinds = wider;
      }
      kinds[depth++] = b === OPEN_BRACKET ? 1 : 0;
      firstItem = b === OPEN_BRACKET;
    } else if (b === CLOSE_BRACE || b === CLOSE_BRACKET) {
      if (depth > 0) depth--;
    } else if (b === COMMA && depth > 0 && kinds[depth - 1] === 1) count++;
    else if (b === COLON && depth > 0 && kinds[depth - 1] === 0) members++;
  }
  return { messages: count, members };
}

/**
 * The possible messages of a JSON body of `json.length` bytes when they alone would take more
 * heap than decodedSizeLimit allows; undefined when they would not.
 */
export function tooManyJsonValues(json: Uint8Array): PossibleMessages | undefined {
  const possible = possibleMessagesHeap(json);
  return possible !== undefined && possible.heap > decodedSizeLimit(json.length) ? possible.count : undefined;
}

/**
 * The possible messages of a JSON body and the heap they alone would take; undefined for a body
 * too short to take much (FEWEST_BYTES_TO_PASS), which is not counted.
 */
export function possibleMessagesHeap(json: Uint8Array): { count: PossibleMessages; heap: number } | undefined {
  if (json.length < FEWEST_BYTES_TO_PASS) return undefined;
  const count = countPossibleMessages(json);
  return { count, heap: count.messages * MESSAGE_HEAP_BYTES + count.members * MEMBER_HEAP_BYTES };
}

/** The refusal's words, for the REST edge and the gRPC listener's JSON protocols alike. */
export function tooManyJsonValuesMessage(count: PossibleMessages, bytes: number): string {
  return (
    `request: ${count.messages} JSON objects, arrays and array items and ${count.members} object members ` +
    `in ${bytes} bytes could take more than ${decodedSizeLimit(bytes)} bytes once decoded ` +
    `(${DECODE_FACTOR} times the bytes, and ${DECODE_SLACK_BYTES}): send fewer values, or values that carry more`
  );
}
