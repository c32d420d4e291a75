// Minimal JSON editing that keeps a file's own formatting: a parse tree with source offsets, and
// edits that touch only the bytes they change. Appending a property or an item and removing it
// again are exact inverses, so `hook install` followed by `hook uninstall` gives back the same
// bytes. Strict JSON only (what JSON.parse accepts), with an optional byte-order mark.

export type JsonNode = ObjectNode | ArrayNode | ValueNode;

export interface ObjectNode {
  kind: "object";
  start: number;
  /** Exclusive: one past the closing brace. */
  end: number;
  props: Prop[];
}

export interface Prop {
  key: string;
  keyStart: number;
  value: JsonNode;
}

export interface ArrayNode {
  kind: "array";
  start: number;
  end: number;
  items: JsonNode[];
}

export interface ValueNode {
  kind: "value";
  start: number;
  end: number;
  value: string | number | boolean | null;
}

export class JsonSyntaxError extends Error {}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

export function parseTree(text: string): JsonNode {
  // JSON.parse gives the familiar message for invalid input; the tree walk below then assumes validity.
  try {
    JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (err) {
    throw new JsonSyntaxError((err as Error).message);
  }
  let pos = text.startsWith("\uFEFF") ? 1 : 0;
  const skip = () => {
    while (pos < text.length && " \t\n\r".includes(text[pos] as string)) pos++;
  };
  const value = (): JsonNode => {
    skip();
    const start = pos;
    const c = text[pos];
    if (c === "{") {
      pos++;
      const props: Prop[] = [];
      skip();
      if (text[pos] === "}") {
        pos++;
        return { kind: "object", start, end: pos, props };
      }
      for (;;) {
        skip();
        const keyStart = pos;
        const key = string();
        skip();
        pos++; // ':'
        props.push({ key, keyStart, value: value() });
        skip();
        if (text[pos++] === "}") return { kind: "object", start, end: pos, props };
      }
    }
    if (c === "[") {
      pos++;
      const items: JsonNode[] = [];
      skip();
      if (text[pos] === "]") {
        pos++;
        return { kind: "array", start, end: pos, items };
      }
      for (;;) {
        items.push(value());
        skip();
        if (text[pos++] === "]") return { kind: "array", start, end: pos, items };
      }
    }
    if (c === '"') return { kind: "value", start, value: string(), end: pos };
    for (const [word, literal] of [
      ["true", true],
      ["false", false],
      ["null", null],
    ] as const) {
      if (text.startsWith(word, pos)) {
        pos += word.length;
        return { kind: "value", start, end: pos, value: literal };
      }
    }
    NUMBER.lastIndex = pos;
    const match = NUMBER.exec(text);
    if (!match) throw new JsonSyntaxError(`unexpected character at offset ${pos}`);
    pos += match[0].length;
    return { kind: "value", start, end: pos, value: Number(match[0]) };
  };
  const string = (): string => {
    const start = pos;
    pos++;
    while (text[pos] !== '"') pos += text[pos] === "\\" ? 2 : 1;
    pos++;
    return JSON.parse(text.slice(start, pos)) as string;
  };
  return value();
}

export function propOf(node: ObjectNode, key: string): Prop | undefined {
  return node.props.find((p) => p.key === key);
}

/** How the file lays itself out: its line ending and one level of indentation. */
export interface Layout {
  nl: string;
  unit: string;
}

export function detectLayout(text: string): Layout {
  const nl = text.includes("\r\n") ? "\r\n" : "\n";
  const indented = /\n([ \t]+)["{[\]}]/.exec(text);
  const unit = indented?.[1]?.startsWith("\t") ? "\t" : (indented?.[1] ?? "  ");
  return { nl, unit };
}

/** The whitespace that starts the line holding `offset`. */
function lineIndent(text: string, offset: number): string {
  const lineStart = text.lastIndexOf("\n", offset - 1) + 1;
  return /^[ \t]*/.exec(text.slice(lineStart))?.[0] ?? "";
}

/** The indentation before `offset` when it begins its line, else undefined. */
function ownLineIndent(text: string, offset: number): string | undefined {
  const lineStart = text.lastIndexOf("\n", offset - 1) + 1;
  const before = text.slice(lineStart, offset);
  return /^[ \t]*$/.test(before) ? before : undefined;
}

/** JSON text for `value` starting at a line indented by `indent`; `compact` keeps it on one line. */
export function serialize(value: unknown, indent: string, layout: Layout, compact: boolean): string {
  if (compact) return JSON.stringify(value);
  return JSON.stringify(value, null, layout.unit)
    .split("\n")
    .join(layout.nl + indent);
}

function splice(text: string, start: number, end: number, insert: string): string {
  return text.slice(0, start) + insert + text.slice(end);
}

/** The start offsets of a container's children (property keys or items) and their end offsets. */
function children(node: ObjectNode | ArrayNode): Array<{ start: number; end: number }> {
  return node.kind === "object"
    ? node.props.map((p) => ({ start: p.keyStart, end: p.value.end }))
    : node.items.map((i) => ({ start: i.start, end: i.end }));
}

/** Appends `"key": value` to an object, or `value` to an array, in the container's own style. */
export function appendChild(text: string, node: ObjectNode | ArrayNode, value: unknown, key?: string): string {
  const layout = detectLayout(text);
  const head = node.kind === "object" ? `${JSON.stringify(key)}: ` : "";
  const kids = children(node);
  const last = kids[kids.length - 1];
  if (!last) {
    const outer = lineIndent(text, node.start);
    const inner = outer + layout.unit;
    const open = text[node.start] as string;
    const close = text[node.end - 1] as string;
    return splice(
      text,
      node.start,
      node.end,
      `${open}${layout.nl}${inner}${head}${serialize(value, inner, layout, false)}${layout.nl}${outer}${close}`,
    );
  }
  const indent = ownLineIndent(text, last.start);
  if (indent === undefined) {
    // A one-line container stays on one line.
    return splice(text, last.end, last.end, `, ${head}${serialize(value, "", layout, true)}`);
  }
  return splice(text, last.end, last.end, `,${layout.nl}${indent}${head}${serialize(value, indent, layout, false)}`);
}

/** Removes child `index` (a property or an item) with its separator: the inverse of appendChild. */
export function removeChild(text: string, node: ObjectNode | ArrayNode, index: number): string {
  const kids = children(node);
  const kid = kids[index];
  if (!kid) throw new RangeError(`no child ${index}`);
  if (kids.length === 1) return splice(text, node.start + 1, node.end - 1, "");
  const previous = kids[index - 1];
  const next = kids[index + 1];
  if (!next && previous) return splice(text, previous.end, kid.end, "");
  return splice(text, kid.start, (next as { start: number }).start, "");
}

/** Replaces a node's text with `value`, in its style (one line if it was on one line). */
export function replaceNode(text: string, node: JsonNode, value: unknown): string {
  const compact = !text.slice(node.start, node.end).includes("\n");
  return splice(
    text,
    node.start,
    node.end,
    serialize(value, lineIndent(text, node.start), detectLayout(text), compact),
  );
}
