// How deeply JSON objects and arrays nest, and the message nesting that allows.
//
// Envoy's transcoder reads a request body with protobuf's JsonStreamParser, which refuses more
// than 100 nested objects and arrays (the body itself is level 1) with "Message too deep. Max
// recursion depth reached for key '<key>'" (or "in array"). The TypeScript edge refuses the same
// bodies with the same words (edge/body.ts). A body within that depth becomes a message nested at
// most two message levels per JSON level (a google.protobuf.Struct and its Value), which the
// edge's JSON reader and the services' binary reader must accept (MESSAGE_RECURSION_LIMIT), so
// that the service, not a decoder, answers for what such a body holds.

/** Envoy's JsonStreamParser: objects and arrays nested at most this deep (kDefaultMaxRecursionDepth). */
export const MAX_JSON_NESTING = 100;

/** Message levels a body of MAX_JSON_NESTING levels can produce: two per level, and the leaf Value. */
export const MESSAGE_RECURSION_LIMIT = 2 * MAX_JSON_NESTING + 1;

export interface TooDeep {
  /** The key of the object member that went past the limit; undefined for an array item. */
  readonly key: string | undefined;
}

/**
 * The first object or array, in document order, nested deeper than `limit` levels, counting
 * `value` itself as level 1 when it is one; undefined when none is. Iterative: a hostile body
 * cannot exhaust the stack.
 */
export function firstTooDeep(value: unknown, limit: number): TooDeep | undefined {
  const stack: [unknown, number, string | undefined][] = [[value, 1, undefined]];
  while (stack.length > 0) {
    const [node, depth, key] = stack.pop()!;
    if (node === null || typeof node !== "object") continue;
    if (depth > limit) return { key };
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], depth + 1, undefined]);
    } else {
      const entries = Object.entries(node);
      for (let i = entries.length - 1; i >= 0; i--) stack.push([entries[i]![1], depth + 1, entries[i]![0]]);
    }
  }
  return undefined;
}
