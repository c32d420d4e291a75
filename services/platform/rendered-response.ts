// Pre-rendered response JSON, handed from a handler to the in-process REST edge.
//
// Some responses are mostly JSON the service already holds as text: the analytics rollup renders
// each day's /tokens row and each /users row once. Over gRPC they must become protobuf messages,
// but when the REST edge runs in the same process (the local transport), building messages from
// that text only for the edge to print them back as the same text is most of the cost of the
// request (BENCHMARKS.md). So the edge offers a slot in the call's context values; a handler that
// finds it may put there the JSON of the response's first field (a repeated field) as text parts,
// and return the message with that field empty. The edge prints the rest of the message as
// usual and splices the parts in. Without the slot (gRPC, Connect, tests calling the handler),
// nothing changes: the handler returns the whole message.
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { BodyPart, ContentCoding } from "./deflate-parts.js";

export interface RenderedField {
  /** JSON name of the message's first field, which the handler left empty. */
  readonly jsonName: string;
  /** Its JSON value (a JSON array), as parts whose concatenation is the text. */
  readonly parts: readonly BodyPart[];
}

export interface RenderedResponseSlot {
  /**
   * Set by the edge: the content coding the client takes that a body of compressed parts can be
   * sent in (so they are welcome), or null.
   */
  readonly coding: ContentCoding | null;
  /** Set by the handler. */
  rendered?: RenderedField;
}

export const kRenderedResponse = createContextKey<RenderedResponseSlot | undefined>(undefined, {
  description: "pre-rendered response slot",
});

/** The slot, when the caller is the in-process edge. */
export function renderedResponseSlot(ctx: HandlerContext): RenderedResponseSlot | undefined {
  return ctx.values.get(kRenderedResponse);
}
